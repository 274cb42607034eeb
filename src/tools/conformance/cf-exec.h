/*
 * cf-exec.h -- running one op case on one device.
 *
 * Every tensor that owns memory (inputs, the result, intermediates) is placed inside its own
 * "arena": a bigger I8 tensor allocated with ggml_backend_alloc_ctx_tensors_from_buft on the
 * device's buffer type, with guard bytes on both sides. The whole arena is uploaded (inputs
 * random, results all-ones bytes, i.e. NaN, so an element never written shows), the graph is
 * computed with ggml_backend_graph_compute, and the whole arena is read back: the guards must be
 * intact, inputs the graph does not write must be unchanged, and the result must match the
 * double-precision reference of cf-ref.h computed from the very bytes that were uploaded.
 */
#ifndef GGMLX_CF_EXEC_H
#define GGMLX_CF_EXEC_H

#include "cf-ref.h"
#include "cf-run.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"

struct cf_device {
    ggml_backend_dev_t          dev;
    const char *                name;
    ggml_backend_t              backend; /* for the op cases */
    ggml_backend_buffer_type_t  buft;
    struct ggml_backend_dev_props props;
    bool                        is_cuda;
};

const char * cf_last_error(void) {
    const char * e = ggmlx_last_error();
    return e != NULL ? e : "(no message)";
}

static size_t cf_align_up(size_t n, size_t a) {
    return a > 1 ? (n + a - 1) / a * a : n;
}

/*
 * A quantized root (contiguous: the builder never permutes one): uniform values quantized by the
 * type's reference quantizer. Zero bytes for a type without one (its cases are skipped: nothing
 * can make its data on the CPU).
 */
static void cf_fill_quant(struct cf_root * r, struct cf_rng * rng, unsigned char * p) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(r->t->type);
    const int64_t n = ggml_nelements(r->t);
    float * x = malloc((size_t) (n > 0 ? n : 1) * sizeof *x);
    if (x == NULL || tr == NULL || tr->from_float_ref == NULL) {
        memset(p, 0, r->nbytes);
        free(x);
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        x[k] = (float) cf_uniform(rng, r->lo, r->hi);
    }
    tr->from_float_ref(x, p, n);
    free(x);
}

static void cf_fill_root(struct cf_root * r, struct cf_rng * rng) {
    const struct ggml_tensor * t = r->t;
    unsigned char * p = r->before + r->offset;
    if (r->fill == CF_FILL_POISON) {
        memset(p, 0xFF, r->nbytes);
        return;
    }
    const size_t  es = ggml_type_size(t->type);
    const int64_t n  = ggml_nelements(t);
    if (ggml_is_quantized(t->type)) {
        cf_fill_quant(r, rng, p);
        return;
    }
    const int64_t ne0 = t->ne[0] > 0 ? t->ne[0] : 1;
    for (int64_t k = 0; k < n; k++) {
        double v = 0;
        switch (r->fill) {
        case CF_FILL_UNIFORM: v = cf_uniform(rng, r->lo, r->hi); break;
        case CF_FILL_SIGNED: v = cf_uniform(rng, r->lo, r->hi) * ((cf_next(rng) & 1) ? -1.0 : 1.0); break;
        case CF_FILL_INT: v = (double) cf_int(rng, (int64_t) r->lo, (int64_t) r->hi); break;
        case CF_FILL_UNIQUE: {
            /* distinct within the row: draw again on a repeat (rows are short, ranges wide) */
            const int64_t row0 = k - k % ne0;
            if ((int64_t) (r->hi - r->lo) + 1 < ne0) {
                v = r->lo + (double) (k - row0); /* cannot be distinct: a case-table mistake */
                break;
            }
            for (;;) {
                v = (double) cf_int(rng, (int64_t) r->lo, (int64_t) r->hi);
                bool dup = false;
                for (int64_t j = row0; j < k && !dup; j++) {
                    dup = cf_load(t->type, p + (size_t) j * es) == v;
                }
                if (!dup) {
                    break;
                }
            }
            break;
        }
        case CF_FILL_SPECIAL: {
            static const double special[] = { INFINITY, -INFINITY, NAN, -0.0, 1e5, -1e-6 };
            v = k % 5 == 2 ? special[cf_next(rng) % 6] : cf_uniform(rng, r->lo, r->hi);
            break;
        }
        case CF_FILL_CAUSAL: {
            const int64_t i0 = k % ne0, i1 = (k / ne0) % t->ne[1];
            v = i0 <= i1 + (t->ne[0] - t->ne[1]) ? 0.0 : -INFINITY;
            break;
        }
        default: break;
        }
        cf_store(t->type, p + (size_t) k * es, v);
    }
}

static void cf_check_result(const struct cf_build * b, const struct cf_ref * ref, struct cf_result * res) {
    const struct cf_acc o = cf_acc_of(b, b->out, true);
    /* below the normal range the output type's spacing is fixed: allow one step of it */
    const double tiny = o.type == GGML_TYPE_F16 ? 0x1.0p-24 : 0.0;
    int64_t bad = 0, total = 0, f[4] = { 0, 0, 0, 0 };
    double  fgot = 0, fwant = 0, ftol = 0, worst = 0;
    CF_FOR4(ref->ne, i0, i1, i2, i3) {
        const size_t k    = cf_idx(ref->ne, i0, i1, i2, i3);
        const double got  = cf_at(&o, i0, i1, i2, i3);
        const double want = ref->want[k];
        const double tol  = ref->tol[k] > 0 ? ref->tol[k] + tiny : 0.0;
        bool ok;
        if (isnan(want)) {
            ok = isnan(got);
        } else if (isinf(want)) {
            ok = got == want;
        } else {
            ok = isfinite(got) && fabs(got - want) <= tol; /* NaN and Inf fail here */
            if (ok && tol > 0 && fabs(got - want) / tol > worst) {
                worst = fabs(got - want) / tol;
            }
        }
        total++;
        if (!ok) {
            if (bad == 0) {
                f[0] = i0, f[1] = i1, f[2] = i2, f[3] = i3;
                fgot = got, fwant = want, ftol = tol;
            }
            bad++;
        }
    }
    if (bad == 0) {
        res->err_ratio = worst;
    }
    CF_FAIL_IF(res, bad > 0, "%lld of %lld elements wrong; first at [%lld,%lld,%lld,%lld]: got %.9g, want %.9g (tol %.3g)",
               (long long) bad, (long long) total, (long long) f[0], (long long) f[1], (long long) f[2],
               (long long) f[3], fgot, fwant, ftol);
}

static void cf_check_guards(const struct cf_build * b, size_t arena_size_of_root[], struct cf_result * res) {
    for (int i = 0; i < b->n_roots; i++) {
        const struct cf_root * r = &b->roots[i];
        const size_t size = arena_size_of_root[i];
        for (size_t k = 0; k < size; k++) {
            if (k == r->offset) {
                k = r->offset + r->nbytes;
                if (k >= size) {
                    break;
                }
            }
            if (r->after[k] != cf_guard_byte(k)) {
                const bool before = k < r->offset;
                CF_FAIL_IF(res, true, "guard bytes %s '%s' overwritten (byte %lld from its %s)",
                           before ? "before" : "after", r->t->name,
                           before ? (long long) (r->offset - k) : (long long) (k - r->offset - r->nbytes),
                           before ? "start" : "end");
                break;
            }
        }
        if (!r->written && memcmp(r->before + r->offset, r->after + r->offset, r->nbytes) != 0) {
            CF_FAIL_IF(res, true, "input '%s' was changed by the computation", r->t->name);
        }
    }
}

/* true when every node of gf is supported; otherwise names the first one in res (a skip) */
static bool cf_supported(const struct cf_device * d, struct ggml_cgraph * gf, struct cf_result * res) {
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        struct ggml_tensor * node = ggml_graph_node(gf, i);
        if (!ggml_backend_dev_supports_op(d->dev, node)) {
            cf_set(res, CF_SKIP, "%s (%s) not supported by the device", ggml_op_desc(node), ggml_type_name(node->type));
            return false;
        }
    }
    return true;
}

/* a quantized input or result needs the type's reference quantizer and dequantizer (a skip otherwise) */
static bool cf_quant_reference_exists(const struct cf_build * b, struct cf_result * res) {
    for (int i = 0; i <= b->n_in; i++) {
        const struct ggml_tensor * t = i < b->n_in ? b->in[i] : b->out;
        const struct ggml_type_traits * tr = ggml_get_type_traits(t->type);
        if (ggml_is_quantized(t->type) && (tr->to_float == NULL || tr->from_float_ref == NULL)) {
            cf_set(res, CF_SKIP, "%s has no reference quantizer or dequantizer in this build", ggml_type_name(t->type));
            return false;
        }
    }
    return true;
}

static void cf_run_op_case(const struct cf_options * opt, struct cf_device * d, const struct cf_op_case * c,
                           struct cf_result * res) {
    struct cf_build       b;
    struct ggml_context * arena_ctx = NULL;
    ggml_backend_buffer_t buf       = NULL;
    struct cf_ref         ref;
    size_t                arena_size[CF_MAX_ROOTS];
    memset(&b, 0, sizeof b);
    memset(&ref, 0, sizeof ref);
    cf_set(res, CF_OK, "%s", "");

    struct ggml_init_params ip = { 64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    b.ctx = ggml_init(ip);
    if (b.ctx == NULL) {
        cf_set(res, CF_FAIL, "ggml_init: %s", cf_last_error());
        goto out;
    }
    b.out = cf_build_op(&b, c);
    if (b.overflow) {
        cf_set(res, CF_FAIL, "the case needs more tensors than the runner has room for");
        goto out;
    }
    if (b.out == NULL) {
        cf_set(res, CF_FAIL, "constructor refused the case: %s", cf_last_error());
        goto out;
    }
    if (b.out->view_src == NULL) {
        ggml_set_name(b.out, "out");
    }
    struct ggml_cgraph * gf = ggml_new_graph(b.ctx);
    if (gf == NULL) {
        cf_set(res, CF_FAIL, "ggml_new_graph: %s", cf_last_error());
        goto out;
    }
    ggml_build_forward_expand(gf, b.out);
    if (!cf_supported(d, gf, res) || !cf_quant_reference_exists(&b, res)) {
        goto out;
    }

    /* results and intermediates own memory too */
    for (struct ggml_tensor * t = ggml_get_first_tensor(b.ctx); t != NULL; t = ggml_get_next_tensor(b.ctx, t)) {
        if (t->view_src == NULL && cf_root_index(&b, t) < 0) {
            cf_add_root(&b, t, CF_FILL_POISON, 0, 0);
        }
    }
    if (b.overflow) {
        cf_set(res, CF_FAIL, "the case needs more tensors than the runner has room for");
        goto out;
    }
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        const int k = cf_root_index(&b, ggml_graph_node(gf, i));
        if (k >= 0) {
            b.roots[k].written = true;
        }
    }

    const size_t align = ggml_backend_buft_get_alignment(d->buft);
    const size_t guard = cf_align_up(64, align);
    struct ggml_init_params ap = { (size_t) (b.n_roots + 1) * ggml_tensor_overhead(), NULL, true };
    arena_ctx = ggml_init(ap);
    if (arena_ctx == NULL) {
        cf_set(res, CF_FAIL, "ggml_init: %s", cf_last_error());
        goto out;
    }
    for (int i = 0; i < b.n_roots; i++) {
        struct cf_root * r = &b.roots[i];
        r->nbytes = ggml_nbytes(r->t);
        r->offset = guard;
        arena_size[i] = guard + cf_align_up(ggml_backend_buft_get_alloc_size(d->buft, r->t), align) + guard;
        r->arena = ggml_new_tensor_1d(arena_ctx, GGML_TYPE_I8, (int64_t) arena_size[i]);
        r->before = malloc(arena_size[i]);
        r->after  = malloc(arena_size[i]);
        if (r->arena == NULL || r->before == NULL || r->after == NULL) {
            cf_set(res, CF_FAIL, "out of host memory for %zu bytes", arena_size[i]);
            goto out;
        }
    }
    buf = ggml_backend_alloc_ctx_tensors_from_buft(arena_ctx, d->buft);
    if (buf == NULL) {
        cf_set(res, CF_FAIL, "ggml_backend_alloc_ctx_tensors_from_buft: %s", cf_last_error());
        goto out;
    }
    for (int i = 0; i < b.n_roots; i++) {
        struct cf_root * r = &b.roots[i];
        ggml_backend_buffer_t rb = r->arena->buffer ? r->arena->buffer : buf;
        const enum ggml_status st = ggml_backend_tensor_alloc(rb, r->t, (char *) r->arena->data + r->offset);
        if (st != GGML_STATUS_SUCCESS) {
            cf_set(res, CF_FAIL, "ggml_backend_tensor_alloc '%s': %s", r->t->name, cf_last_error());
            goto out;
        }
    }
    for (struct ggml_tensor * t = ggml_get_first_tensor(b.ctx); t != NULL; t = ggml_get_next_tensor(b.ctx, t)) {
        if (t->view_src != NULL && t->buffer == NULL && ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) {
            cf_set(res, CF_FAIL, "ggml_backend_view_init '%s': %s", t->name, cf_last_error());
            goto out;
        }
    }

    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash(c->name));
    for (int i = 0; i < b.n_roots; i++) {
        struct cf_root * r = &b.roots[i];
        for (size_t k = 0; k < arena_size[i]; k++) {
            r->before[k] = cf_guard_byte(k);
        }
        cf_fill_root(r, &rng);
        ggml_backend_tensor_set(r->arena, r->before, 0, arena_size[i]);
    }

    const size_t n_out = (size_t) ggml_nelements(b.out);
    ref.c     = c;
    ref.b     = &b;
    ref.want  = malloc((n_out ? n_out : 1) * sizeof(double));
    ref.tol   = malloc((n_out ? n_out : 1) * sizeof(double));
    memcpy(ref.ne, b.out->ne, sizeof ref.ne);
    if (ref.want == NULL || ref.tol == NULL) {
        cf_set(res, CF_FAIL, "out of host memory for the reference");
        goto out;
    }
    cf_load_quant_reset(); /* this case's host copies may sit where the last case's were */
    cf_reference(&ref);
    if (ref.failed) {
        cf_set(res, CF_FAIL, "no reference for this case");
        goto out;
    }
    if (opt->wrong_reference && n_out > 0) {
        const size_t k = n_out / 2;
        /* off by more than the tolerance, whatever the case's tolerance is */
        const double tol = ref.tol[k] + 1.0;
        ref.want[k] = isfinite(ref.want[k]) ? ref.want[k] + 2.0 * (tol + fabs(ref.want[k])) : 0.0;
    }

    const enum ggml_status st = ggml_backend_graph_compute(d->backend, gf);
    if (st != GGML_STATUS_SUCCESS) {
        cf_set(res, CF_FAIL, "ggml_backend_graph_compute returned %s: %s", ggml_status_to_string(st), cf_last_error());
        ggmlx_backend_clear_status(d->backend); /* one failed case must not fail the ones after it */
        goto out;
    }
    if (opt->break_guard) {
        const int k = cf_root_index(&b, b.out);
        const unsigned char bad = (unsigned char) ~cf_guard_byte(b.roots[k].offset + b.roots[k].nbytes);
        ggml_backend_tensor_set(b.roots[k].arena, &bad, b.roots[k].offset + b.roots[k].nbytes, 1);
    }
    for (int i = 0; i < b.n_roots; i++) {
        ggml_backend_tensor_get(b.roots[i].arena, b.roots[i].after, 0, arena_size[i]);
    }

    cf_check_guards(&b, arena_size, res);
    cf_load_quant_reset();
    cf_check_result(&b, &ref, res);

out:
    free(ref.want);
    free(ref.tol);
    ggml_backend_buffer_free(buf);
    for (int i = 0; i < b.n_roots; i++) {
        free(b.roots[i].before);
        free(b.roots[i].after);
    }
    ggml_free(arena_ctx);
    ggml_free(b.ctx);
}

#endif /* GGMLX_CF_EXEC_H */
