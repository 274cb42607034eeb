/*
 * bench-sched-pipe.h -- the pipeline half of bench-sched.c: a compute-bound two-stage graph
 * (stage 1's matmul weights on one device, stage 2's on another), run through the scheduler
 * with upstream's loop, run as two plain graphs without a scheduler (the machine's ceiling), traced
 * (devices computing at once), and measured for memory as the input copies grow.
 * Split off to keep files short; included by bench-sched.c only, after its helpers (die,
 * new_ctx, the memory table).
 */
#ifndef GGMLX_BENCH_SCHED_PIPE_H
#define GGMLX_BENCH_SCHED_PIPE_H

enum { PIPE_D = 1024, PIPE_B = 64, PIPE_L = 4 };

struct pipe {
    struct ggml_context * wctx[2];
    ggml_backend_buffer_t wbuf[2];
    struct ggml_tensor  * w[2][PIPE_L];
    struct ggml_context * ctx;
    struct ggml_tensor  * x, * out;
    struct ggml_cgraph  * g;
    /* each stage alone as a graph of its backend, for runs without the scheduler */
    ggml_backend_t        stage_backend[2];
    struct ggml_cgraph  * stage_graph[2];
    ggml_gallocr_t        stage_alloc[2];
};

/* stage s's weights on stage_backend[s]; the WEIGHTS usage pins its matmuls there */
static void pipe_init(struct pipe * p, ggml_backend_t stage_backend[2]) {
    memset(p, 0, sizeof *p);
    struct ggml_tensor * (*w)[PIPE_L] = p->w;
    for (int s = 0; s < 2; s++) {
        p->stage_backend[s] = stage_backend[s];
        p->wctx[s] = new_ctx(PIPE_L, 0);
        for (int l = 0; l < PIPE_L; l++) {
            w[s][l] = ggml_new_tensor_2d(p->wctx[s], GGML_TYPE_F32, PIPE_D, PIPE_D);
        }
        p->wbuf[s] = ggml_backend_alloc_ctx_tensors_from_buft(p->wctx[s],
                                                              ggml_backend_get_default_buffer_type(stage_backend[s]));
        if (p->wbuf[s] == NULL) {
            die("pipeline weights");
        }
        ggml_backend_buffer_set_usage(p->wbuf[s], GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        for (int l = 0; l < PIPE_L; l++) {
            /* uniform in +-sqrt(3/D): each matmul keeps the activations' scale */
            sm_fill(w[s][l], 7, (uint64_t) s, (uint64_t) l, 0.0f, sqrtf(3.0f / PIPE_D));
        }
    }
    p->ctx = new_ctx(4 * PIPE_L + 8, 3 * 256);
    p->x   = ggml_new_tensor_2d(p->ctx, GGML_TYPE_F32, PIPE_D, PIPE_B);
    ggml_set_input(p->x);
    struct ggml_tensor * h = p->x;
    for (int s = 0; s < 2; s++) {
        for (int l = 0; l < PIPE_L; l++) {
            h = ggml_mul_mat(p->ctx, w[s][l], h);
        }
    }
    p->out = h;
    ggml_set_output(p->out);
    p->g = ggml_new_graph_custom(p->ctx, 256, false);
    ggml_build_forward_expand(p->g, p->out);
    for (int s = 0; s < 2; s++) {
        struct ggml_tensor * h = ggml_new_tensor_2d(p->ctx, GGML_TYPE_F32, PIPE_D, PIPE_B);
        struct ggml_tensor * in = h;
        for (int l = 0; l < PIPE_L; l++) {
            h = ggml_mul_mat(p->ctx, w[s][l], h);
        }
        p->stage_graph[s] = ggml_new_graph_custom(p->ctx, 256, false);
        ggml_build_forward_expand(p->stage_graph[s], h);
        p->stage_alloc[s] = ggml_gallocr_new(ggml_backend_get_default_buffer_type(stage_backend[s]));
        if (p->stage_alloc[s] == NULL || !ggml_gallocr_alloc_graph(p->stage_alloc[s], p->stage_graph[s])) {
            die("a stage graph without the scheduler");
        }
        ggml_backend_tensor_memset(in, 0, 0, ggml_nbytes(in));
    }
}

/* both stage graphs k times on their backends' queues, no scheduler: one after the other on
 * one device, at once on two. The time per pair. */
static double stages_run(struct pipe * p, int k) {
    const double t0 = bench_now_us();
    for (int i = 0; i < k; i++) {
        for (int s = 0; s < 2; s++) {
            if (ggml_backend_graph_compute_async(p->stage_backend[s], p->stage_graph[s]) != GGML_STATUS_SUCCESS) {
                die("ggml_backend_graph_compute_async (stage)");
            }
        }
    }
    ggml_backend_synchronize(p->stage_backend[0]);
    ggml_backend_synchronize(p->stage_backend[1]);
    return (bench_now_us() - t0) / k;
}

static void pipe_free(struct pipe * p) {
    ggml_free(p->ctx);
    for (int s = 0; s < 2; s++) {
        ggml_gallocr_free(p->stage_alloc[s]);
        ggml_backend_buffer_free(p->wbuf[s]);
        ggml_free(p->wctx[s]);
    }
}

/* upstream's loop, k computes in flight as far as the copies allow; the time per compute */
static double pipe_run(struct pipe * p, ggml_backend_sched_t s, const float * in, int k_computes) {
    const double t0 = bench_now_us();
    for (int k = 0; k < k_computes; k++) {
        ggml_backend_sched_reset(s);
        if (!ggml_backend_sched_alloc_graph(s, p->g)) {
            die("ggml_backend_sched_alloc_graph (pipeline)");
        }
        ggml_backend_tensor_set(p->x, in + (size_t) (k % 2) * PIPE_D * PIPE_B, 0, ggml_nbytes(p->x));
        if (ggml_backend_sched_graph_compute_async(s, p->g) != GGML_STATUS_SUCCESS) {
            die("ggml_backend_sched_graph_compute_async (pipeline)");
        }
    }
    ggml_backend_sched_synchronize(s);
    return (bench_now_us() - t0) / k_computes;
}

/*
 * The average number of devices computing at once in a traced run of k computes: the overlap
 * the scheduler achieved, whatever share of the cores each device's thread got. Read from the
 * Chrome trace (one "compute" span per split, times taken on the queues); NAN when unreadable.
 */
static double pipe_overlap(struct pipe * p, ggml_backend_sched_t s, const float * in, int k) {
    char path[] = "/tmp/bench-sched-trace-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) {
        return NAN;
    }
    close(fd);
    double busy = 0.0, t0 = INFINITY, t1 = -INFINITY;
    if (ggmlx_sched_set_trace(s, path)) {
        pipe_run(p, s, in, k);
        ggmlx_sched_set_trace(s, NULL);
        FILE * f = fopen(path, "r");
        char line[512];
        while (f != NULL && fgets(line, sizeof line, f) != NULL) {
            const char * ts = strstr(line, "\"ts\":");
            const char * du = strstr(line, "\"dur\":");
            double b, d;
            if (strstr(line, "\"cat\":\"compute\"") && ts && du && sscanf(ts + 5, "%lf", &b) == 1 &&
                sscanf(du + 6, "%lf", &d) == 1) {
                busy += d;
                t0 = b < t0 ? b : t0;
                t1 = b + d > t1 ? b + d : t1;
            }
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    remove(path);
    return t1 > t0 ? busy / (t1 - t0) : NAN;
}

/* memory of the 2-SIM graph as the input copies grow */
static void pipe_memory(struct pipe * p, ggml_backend_sched_t s, ggml_backend_t * backends) {
    const int copies[3] = { 1, 2, 4 };
    for (int c = 0; c < 3; c++) {
        if (!ggmlx_sched_set_n_copies(s, copies[c])) {
            die("ggmlx_sched_set_n_copies");
        }
        /* one alloc per slot, so every slot has had its memory */
        for (int k = 0; k < copies[c]; k++) {
            ggml_backend_sched_reset(s);
            if (!ggml_backend_sched_alloc_graph(s, p->g)) {
                die("ggml_backend_sched_alloc_graph (memory)");
            }
        }
        struct ggmlx_sched_stats st;
        ggmlx_sched_get_stats(s, &st);
        struct memrow * m = &g_mem[g_n_mem++];
        memset(m, 0, sizeof *m);
        m->graph         = "two-stage pipeline (input 256 KiB)";
        m->n_copies      = copies[c];
        g_n_mem_backends = 3;
        for (int b = 0; b < 3; b++) {
            g_mem_backends[b] = ggml_backend_name(backends[b]);
            m->bytes[b]       = ggml_backend_sched_get_buffer_size(s, backends[b]);
            for (int j = 0; j < GGMLX_SCHED_MAX_COPIES; j++) {
                m->slot_bytes += st.input_slot_bytes[b][j];
            }
        }
    }
}

#endif /* GGMLX_BENCH_SCHED_PIPE_H */
