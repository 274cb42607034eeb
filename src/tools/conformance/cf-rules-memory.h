/*
 * cf-rules-memory.h -- backend rules about memory: buffers (properties, zero size, clear) and
 * moving bytes in and out of tensors (offsets, 2-D forms, memset, copies, refusals past the end).
 */
#ifndef GGMLX_CF_RULES_MEMORY_H
#define GGMLX_CF_RULES_MEMORY_H

#include "cf-fixture.h"

/* ---- buffers ------------------------------------------------------------------------------- */

static void cf_rule_buffer_alloc(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    (void) opt;
    const size_t size = 1u << 20;
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(d->buft, size);
    if (buf == NULL) {
        cf_set(res, CF_FAIL, "ggml_backend_buft_alloc_buffer(1 MiB): %s", cf_last_error());
        return;
    }
    const size_t align = ggml_backend_buffer_get_alignment(buf);
    CF_FAIL_IF(res, ggml_backend_buffer_get_size(buf) < size, "size %zu < %zu", ggml_backend_buffer_get_size(buf), size);
    CF_FAIL_IF(res, ggml_backend_buffer_get_base(buf) == NULL, "base is NULL");
    CF_FAIL_IF(res, align == 0 || (align & (align - 1)) != 0, "alignment %zu is not a power of two", align);
    CF_FAIL_IF(res, align != ggml_backend_buft_get_alignment(d->buft), "buffer alignment %zu != its type's %zu", align,
               ggml_backend_buft_get_alignment(d->buft));
    CF_FAIL_IF(res, ((uintptr_t) ggml_backend_buffer_get_base(buf)) % align != 0, "base not aligned to %zu", align);
    CF_FAIL_IF(res, ggml_backend_buffer_get_type(buf) != d->buft, "get_type is not the buffer type it came from");
    CF_FAIL_IF(res, ggml_backend_buffer_is_host(buf) != ggml_backend_buft_is_host(d->buft), "is_host differs from its type's");
    CF_FAIL_IF(res, ggml_backend_buffer_name(buf) == NULL, "no name");
    /* upstream leaves the CPU buffer type without a device; any other must name its own */
    const ggml_backend_dev_t bdev = ggml_backend_buft_get_device(d->buft);
    CF_FAIL_IF(res, bdev != d->dev && !(bdev == NULL && d->props.type == GGML_BACKEND_DEVICE_TYPE_CPU),
               "the buffer type's device is not the device");
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    CF_FAIL_IF(res, ggml_backend_buffer_get_usage(buf) != GGML_BACKEND_BUFFER_USAGE_WEIGHTS, "usage not kept");
    ggml_backend_buffer_free(buf);

    /* a zero-size buffer is a valid, empty buffer */
    buf = ggml_backend_buft_alloc_buffer(d->buft, 0);
    CF_FAIL_IF(res, buf == NULL, "a zero-size buffer was refused: %s", cf_last_error());
    ggml_backend_buffer_free(buf);
    ggml_backend_buffer_free(NULL); /* allowed, does nothing */
}

static void cf_rule_buffer_clear(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    (void) opt;
    struct cf_fixture f;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * t = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, 1000);
    if (t == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, t == NULL, "ggml_new_tensor_1d: %s", cf_last_error());
        goto out;
    }
    unsigned char h[4000];
    const uint8_t values[2] = { 0x5A, 0x00 };
    for (int v = 0; v < 2; v++) {
        ggml_backend_buffer_clear(f.buf, values[v]);
        memset(h, 0xEE, sizeof h);
        ggml_backend_tensor_get(t, h, 0, sizeof h);
        for (size_t i = 0; i < sizeof h; i++) {
            if (h[i] != values[v]) {
                cf_set(res, CF_FAIL, "after clear(0x%02x), byte %zu is 0x%02x", values[v], i, h[i]);
                goto out;
            }
        }
    }
out:
    cf_fixture_end(&f);
}

/* ---- tensor set / get ------------------------------------------------------------------------ */

static void cf_rule_set_get(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    struct cf_fixture f;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * t = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, 1037);
    if (t == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, t == NULL, "ggml_new_tensor_1d: %s", cf_last_error());
        goto out;
    }
    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash("rule set/get"));
    const size_t n = ggml_nbytes(t);
    unsigned char a[4148], bb[4148], part[148];
    cf_random_bytes(&rng, a, n);
    ggml_backend_tensor_set(t, a, 0, n);
    memset(bb, 0, n);
    ggml_backend_tensor_get(t, bb, 0, n);
    CF_FAIL_IF(res, memcmp(a, bb, n) != 0, "whole-tensor get differs from what was set");

    /* a part at an offset: only those bytes change */
    cf_random_bytes(&rng, part, sizeof part);
    ggml_backend_tensor_set(t, part, 400, sizeof part);
    memcpy(a + 400, part, sizeof part);
    ggml_backend_tensor_get(t, bb, 0, n);
    CF_FAIL_IF(res, memcmp(a, bb, n) != 0, "set at offset 400 changed other bytes or missed some");
    unsigned char got[148];
    ggml_backend_tensor_get(t, got, 400, sizeof got);
    CF_FAIL_IF(res, memcmp(got, part, sizeof part) != 0, "get at offset 400 differs");

    /* memset of a range */
    ggml_backend_tensor_memset(t, 0x7F, 40, 80);
    memset(a + 40, 0x7F, 80);
    ggml_backend_tensor_get(t, bb, 0, n);
    CF_FAIL_IF(res, memcmp(a, bb, n) != 0, "tensor_memset(0x7f, 40, 80) wrong");
out:
    cf_fixture_end(&f);
}

static void cf_rule_set_get_2d(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    struct cf_fixture f;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * t = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 64, 8);
    if (t == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, t == NULL, "ggml_new_tensor_2d: %s", cf_last_error());
        goto out;
    }
    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash("rule set/get 2d"));
    enum { ROW = 64 * 4, N = 8 * 64 * 4 };
    unsigned char base[N], src[8 * 48], dev[N], back[8 * 48];
    cf_random_bytes(&rng, base, N);
    cf_random_bytes(&rng, src, sizeof src);
    ggml_backend_tensor_set(t, base, 0, N);
    /* 8 runs of 40 bytes, from host rows 48 bytes apart into tensor rows at byte 12 */
    ggml_backend_tensor_set_2d(t, src, 12, 40, 8, t->nb[1], 48);
    for (int r = 0; r < 8; r++) {
        memcpy(base + r * ROW + 12, src + r * 48, 40);
    }
    ggml_backend_tensor_get(t, dev, 0, N);
    CF_FAIL_IF(res, memcmp(dev, base, N) != 0, "tensor_set_2d wrote the wrong bytes");
    memset(back, 0, sizeof back);
    ggml_backend_tensor_get_2d(t, back, 12, 40, 8, t->nb[1], 48);
    for (int r = 0; r < 8; r++) {
        CF_FAIL_IF(res, memcmp(back + r * 48, src + r * 48, 40) != 0, "tensor_get_2d row %d differs", r);
    }
out:
    cf_fixture_end(&f);
}

static void cf_rule_out_of_range(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    struct cf_fixture f;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * t = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, 100);
    if (t == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, t == NULL, "ggml_new_tensor_1d: %s", cf_last_error());
        goto out;
    }
    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash("rule out of range"));
    unsigned char a[400], junk[64], h[400];
    cf_random_bytes(&rng, a, sizeof a);
    memset(junk, 0xC3, sizeof junk);
    ggml_backend_tensor_set(t, a, 0, sizeof a);

    atomic_store(&cf_quiet, 1);
    ggmlx_clear_last_error();
    ggml_backend_tensor_set(t, junk, 384, 32); /* 16 bytes past the end */
    CF_FAIL_IF(res, ggmlx_last_error() == NULL, "set past the end gave no error");
    ggml_backend_tensor_set(t, junk, 401, 0);
    ggml_backend_tensor_set(t, junk, SIZE_MAX - 8, 16); /* offset + size wraps around */
    ggml_backend_tensor_set_2d(t, junk, 0, 32, 4, 100, 0); /* the last run ends at 332: fits */
    memcpy(a, junk, 32), memcpy(a + 100, junk, 32), memcpy(a + 200, junk, 32), memcpy(a + 300, junk, 32);
    ggml_backend_tensor_set_2d(t, junk, 0, 32, 5, 100, 0); /* the fifth run ends at 432: refused */
    ggml_backend_tensor_memset(t, 0, 390, 20);

    memset(h, 0xEE, sizeof h);
    ggmlx_clear_last_error();
    ggml_backend_tensor_get(t, h, 300, 101);
    CF_FAIL_IF(res, ggmlx_last_error() == NULL, "get past the end gave no error");
    for (size_t i = 0; i < sizeof h; i++) {
        if (h[i] != 0xEE) {
            CF_FAIL_IF(res, true, "get past the end wrote into the host buffer (byte %zu)", i);
            break;
        }
    }
    atomic_store(&cf_quiet, 0);

    ggml_backend_tensor_get(t, h, 0, sizeof h);
    CF_FAIL_IF(res, memcmp(h, a, sizeof a) != 0, "a refused set/memset changed the tensor");
out:
    atomic_store(&cf_quiet, 0);
    cf_fixture_end(&f);
}

static void cf_rule_tensor_copy(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    struct cf_fixture f;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * s  = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 33, 7);
    struct ggml_tensor * t  = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 33, 7);
    struct ggml_tensor * t2 = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 33, 7);
    ggml_backend_t b1 = NULL, b2 = NULL;
    if (s == NULL || t == NULL || t2 == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, true, "ggml_new_tensor_2d: %s", cf_last_error());
        goto out;
    }
    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash("rule tensor copy"));
    unsigned char a[33 * 7 * 4], h[33 * 7 * 4];
    cf_random_bytes(&rng, a, sizeof a);
    ggml_backend_tensor_set(s, a, 0, sizeof a);
    ggml_backend_tensor_copy(s, t);
    ggml_backend_tensor_get(t, h, 0, sizeof h);
    CF_FAIL_IF(res, memcmp(a, h, sizeof a) != 0, "tensor_copy: destination differs");

    /* between two backends of the device: ordered after what src's queue holds */
    b1 = ggml_backend_dev_init(d->dev, NULL);
    b2 = ggml_backend_dev_init(d->dev, NULL);
    if (b1 == NULL || b2 == NULL) {
        cf_set(res, CF_FAIL, "ggml_backend_dev_init: %s", cf_last_error());
        goto out;
    }
    cf_random_bytes(&rng, a, sizeof a);
    ggml_backend_tensor_set_async(b1, s, a, 0, sizeof a);
    ggml_backend_tensor_copy_async(b1, b2, s, t2);
    memset(h, 0, sizeof h);
    ggml_backend_tensor_get_async(b2, t2, h, 0, sizeof h);
    ggml_backend_synchronize(b2);
    ggml_backend_synchronize(b1);
    CF_FAIL_IF(res, memcmp(a, h, sizeof a) != 0, "tensor_copy_async did not copy what was queued before it");
out:
    ggml_backend_free(b1);
    ggml_backend_free(b2);
    cf_fixture_end(&f);
}

#endif /* GGMLX_CF_RULES_MEMORY_H */
