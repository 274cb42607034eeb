/*
 * host-alias.c -- the table of hidden ranges and their read-write twins (host-alias.h).
 *
 * A sorted array: buffers are few and long-lived, lookups many (every tensor of every queued
 * computation), so insertion may move memory while a lookup is one binary search.
 */
#include "host-alias.h"

#include "ggml-impl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

struct alias {
    uintptr_t    hidden;
    size_t       size;
    char       * rw;
    const void * owner;
};

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct alias   * g_aliases;
static size_t           g_n, g_cap;

/* index of the first range starting after p (lock held) */
static size_t upper_bound(uintptr_t p) {
    size_t lo = 0, hi = g_n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (g_aliases[mid].hidden <= p) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

bool ggmlx_alias_add(const void * hidden, void * rw, size_t size, const void * owner) {
    const uintptr_t h = (uintptr_t) hidden;
    if (hidden == NULL || rw == NULL || size == 0 || size > UINTPTR_MAX - h) {
        ggmlx_error(__func__, "bad range %p + %zu", hidden, size);
        return false;
    }
    bool ok = false;
    pthread_rwlock_wrlock(&g_lock);
    const size_t i = upper_bound(h);
    /* the ranges before and after must end before this one starts, and start after it ends */
    if ((i > 0 && g_aliases[i - 1].hidden + g_aliases[i - 1].size > h) || (i < g_n && g_aliases[i].hidden < h + size)) {
        pthread_rwlock_unlock(&g_lock);
        ggmlx_error(__func__, "range %p + %zu overlaps one already registered", hidden, size);
        return false;
    }
    if (g_n == g_cap) {
        const size_t cap = g_cap ? g_cap * 2 : 16;
        struct alias * a = realloc(g_aliases, cap * sizeof *a);
        if (a == NULL) {
            goto out;
        }
        g_aliases = a;
        g_cap     = cap;
    }
    memmove(&g_aliases[i + 1], &g_aliases[i], (g_n - i) * sizeof *g_aliases);
    g_aliases[i] = (struct alias) { h, size, rw, owner };
    g_n++;
    ok = true;
out:
    pthread_rwlock_unlock(&g_lock);
    if (!ok) {
        ggmlx_error(__func__, "out of host memory");
    }
    return ok;
}

void ggmlx_alias_remove(const void * hidden) {
    const uintptr_t h = (uintptr_t) hidden;
    pthread_rwlock_wrlock(&g_lock);
    const size_t i = upper_bound(h);
    if (i > 0 && g_aliases[i - 1].hidden == h) {
        memmove(&g_aliases[i - 1], &g_aliases[i], (g_n - i) * sizeof *g_aliases);
        g_n--;
    }
    if (g_n == 0) {
        /* the last buffer is gone: give the array back, so a process that ends cleanly leaks nothing */
        free(g_aliases);
        g_aliases = NULL;
        g_cap     = 0;
    }
    pthread_rwlock_unlock(&g_lock);
}

void * ggmlx_alias_lookup(const void * p, const void ** owner) {
    const uintptr_t at = (uintptr_t) p;
    void * rw = NULL;
    pthread_rwlock_rdlock(&g_lock);
    const size_t i = upper_bound(at);
    if (i > 0 && at - g_aliases[i - 1].hidden < g_aliases[i - 1].size) {
        const struct alias * a = &g_aliases[i - 1];
        rw = a->rw + (at - a->hidden);
        if (owner != NULL) {
            *owner = a->owner;
        }
    }
    pthread_rwlock_unlock(&g_lock);
    return rw;
}
