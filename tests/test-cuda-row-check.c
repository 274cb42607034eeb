/*
 * test-cuda-row-check.c -- turning the CUDA rows kernels' error word into a message, and when the
 * host reads the word back at all (cuda/row-check.c linked in; words written by hand as the
 * kernels would). No GPU or CUDA header needed: it runs in CPU-only builds too.
 */
#include <criterion/criterion.h>

#include "row-check.h"

#include "ggml.h"

#include <string.h>

struct fixture {
    struct ggml_context * ctx;
    struct ggml_cgraph  * plain;  /* no rows node */
    struct ggml_cgraph  * get;    /* scale, get_rows: the rows node is node 1 */
    struct ggml_cgraph  * set;    /* scale, set_rows: the rows node is node 1 too */
};

static struct fixture f;
static struct ggmlx_row_check g_rc;

/* table: 10 rows of 4; ids: 6 indices, as 3 x 2 for set_rows' broadcasting */
static void setup(void) {
    struct ggml_init_params ip = { 32 * ggml_tensor_overhead() + 3 * ggml_graph_overhead(), NULL, true };
    f.ctx = ggml_init(ip);
    cr_assert_not_null(f.ctx);
    struct ggml_tensor * table = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4, 10);
    struct ggml_tensor * ids   = ggml_new_tensor_1d(f.ctx, GGML_TYPE_I32, 6);
    struct ggml_tensor * ids64 = ggml_new_tensor_1d(f.ctx, GGML_TYPE_I64, 3);
    struct ggml_tensor * dst   = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4, 7);
    struct ggml_tensor * src   = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4, 3);

    f.plain = ggml_new_graph(f.ctx);
    ggml_build_forward_expand(f.plain, ggml_scale(f.ctx, table, 2.0f));

    f.get = ggml_new_graph(f.ctx);
    struct ggml_tensor * rows = ggml_get_rows(f.ctx, ggml_scale(f.ctx, table, 3.0f), ids);
    ggml_set_name(rows, "embd");
    ggml_build_forward_expand(f.get, rows);

    f.set = ggml_new_graph(f.ctx);
    struct ggml_tensor * put = ggml_set_rows(f.ctx, dst, ggml_scale(f.ctx, src, 4.0f), ids64);
    ggml_set_name(put, "kv_store");
    ggml_build_forward_expand(f.set, put);

    cr_assert_eq(ggml_graph_node(f.get, 1)->op, GGML_OP_GET_ROWS);
    cr_assert_eq(ggml_graph_node(f.set, 1)->op, GGML_OP_SET_ROWS);
    ggmlx_row_check_reset(&g_rc);
}

static void teardown(void) {
    ggml_free(f.ctx);
}

TestSuite(cuda_row_check, .init = setup, .fini = teardown, .timeout = 60);

/* what a kernel leaves after the first bad index */
static void record(int64_t w[GGMLX_ROW_ERR_SLOTS], int64_t epoch, int64_t node, int64_t v, int64_t p0, int64_t p1,
                   int64_t p2) {
    memset(w, 0, GGMLX_ROW_ERR_SLOTS * sizeof *w);
    w[GGMLX_ROW_ERR_CLAIM] = 1;
    w[GGMLX_ROW_ERR_EPOCH] = epoch + 5; /* a later compute's number: the record's own must be used */
    w[GGMLX_ROW_ERR_AT]    = epoch;
    w[GGMLX_ROW_ERR_NODE]  = node;
    w[GGMLX_ROW_ERR_VALUE] = v;
    w[GGMLX_ROW_ERR_POS0]  = p0;
    w[GGMLX_ROW_ERR_POS1]  = p1;
    w[GGMLX_ROW_ERR_POS2]  = p2;
}

Test(cuda_row_check, computes_without_rows_nodes_never_read_the_word_back) {
    cr_assert_not(ggmlx_row_check_pending(&g_rc), "nothing enqueued yet");
    cr_assert_eq(ggmlx_row_check_add(&g_rc, f.plain), 0, "no epoch to write for a compute without rows nodes");
    cr_assert_eq(ggmlx_row_check_add(&g_rc, f.plain), 0);
    cr_assert_not(ggmlx_row_check_pending(&g_rc));
    cr_assert_eq(g_rc.n_nodes, 0);
}

Test(cuda_row_check, a_rows_compute_makes_a_read_back_due_until_reset) {
    cr_assert_eq(ggmlx_row_check_add(&g_rc, f.get), 1, "the first rows compute since the check is epoch 1");
    cr_assert(ggmlx_row_check_pending(&g_rc));
    cr_assert_eq(ggmlx_row_check_add(&g_rc, f.plain), 0, "a plain compute in between takes no epoch");
    cr_assert_eq(ggmlx_row_check_add(&g_rc, f.set), 2);
    cr_assert_eq(g_rc.n_nodes, 2);
    ggmlx_row_check_reset(&g_rc);
    cr_assert_not(ggmlx_row_check_pending(&g_rc), "the check consumed it");
    cr_assert_eq(ggmlx_row_check_add(&g_rc, f.set), 1, "epochs restart after a check");
}

Test(cuda_row_check, a_clear_word_is_no_error) {
    ggmlx_row_check_add(&g_rc, f.get);
    int64_t w[GGMLX_ROW_ERR_SLOTS] = { 0 };
    w[GGMLX_ROW_ERR_EPOCH] = 1; /* the host's own write: not a record */
    char msg[256] = "untouched";
    cr_assert_not(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "untouched");
}

Test(cuda_row_check, get_rows_record_reads_as_the_cpu_message) {
    ggmlx_row_check_add(&g_rc, f.get);
    int64_t w[GGMLX_ROW_ERR_SLOTS];
    record(w, 1, 1, 17, 3, 0, 0);
    char msg[256];
    cr_assert(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "embd (GET_ROWS): row index 17 at [3, 0, 0] is out of range 0..9");
    record(w, 1, 1, -1, 5, 0, 0);
    cr_assert(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "embd (GET_ROWS): row index -1 at [5, 0, 0] is out of range 0..9", "negative indices too");
}

Test(cuda_row_check, the_record_names_the_compute_it_came_from) {
    ggmlx_row_check_add(&g_rc, f.get); /* epoch 1, node 1 */
    ggmlx_row_check_add(&g_rc, f.set); /* epoch 2, node 1: same position, another node */
    int64_t w[GGMLX_ROW_ERR_SLOTS];
    record(w, 2, 1, 7, 2, 0, 0);
    char msg[256];
    cr_assert(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "kv_store (SET_ROWS): row index 7 at [2, 0, 0] is out of range 0..6",
                     "set_rows is bounded by the destination's rows");
    record(w, 1, 1, 10, 0, 0, 0);
    cr_assert(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "embd (GET_ROWS): row index 10 at [0, 0, 0] is out of range 0..9");
}

Test(cuda_row_check, a_full_table_still_reports_position_and_value) {
    for (int i = 0; i < GGMLX_ROW_CHECK_NODES; i++) {
        cr_assert_eq(ggmlx_row_check_add(&g_rc, f.get), i + 1);
    }
    cr_assert_eq(ggmlx_row_check_add(&g_rc, f.set), GGMLX_ROW_CHECK_NODES + 1, "counted though not kept");
    cr_assert_eq(g_rc.n_nodes, GGMLX_ROW_CHECK_NODES);
    int64_t w[GGMLX_ROW_ERR_SLOTS];
    record(w, GGMLX_ROW_CHECK_NODES + 1, 1, 99, 1, 2, 0);
    char msg[256];
    cr_assert(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "node 1 of the compute 65 since the last synchronize (name not kept: more than 64 rows "
                          "nodes were queued): row index 99 at [1, 2, 0] is out of range");
    record(w, GGMLX_ROW_CHECK_NODES, 1, 12, 4, 0, 0);
    cr_assert(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "embd (GET_ROWS): row index 12 at [4, 0, 0] is out of range 0..9", "the last one kept");
}

Test(cuda_row_check, a_long_name_is_cut_to_the_buffer) {
    ggmlx_row_check_add(&g_rc, f.get);
    int64_t w[GGMLX_ROW_ERR_SLOTS];
    record(w, 1, 1, 17, 3, 0, 0);
    char msg[12];
    cr_assert(ggmlx_row_check_decode(&g_rc, w, msg, sizeof msg));
    cr_assert_str_eq(msg, "embd (GET_R");
}
