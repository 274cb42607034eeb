/*
 * error.c -- logging, the per-thread last error, aborts, status names, version, clocks.
 */
#include "ggml-impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- logging ------------------------------------------------------------------------------- */

static void log_to_stderr(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) user_data;
    fputs(text, stderr);
    fflush(stderr);
}

/* The callback and its data change together, and workers log concurrently: guard both. */
static pthread_mutex_t   g_log_mutex     = PTHREAD_MUTEX_INITIALIZER;
static ggml_log_callback g_log_callback  = log_to_stderr;
static void            * g_log_user_data = NULL;

void ggml_log_get(ggml_log_callback * log_callback, void ** user_data) {
    pthread_mutex_lock(&g_log_mutex);
    if (log_callback) {
        *log_callback = g_log_callback;
    }
    if (user_data) {
        *user_data = g_log_user_data;
    }
    pthread_mutex_unlock(&g_log_mutex);
}

void ggml_log_set(ggml_log_callback log_callback, void * user_data) {
    pthread_mutex_lock(&g_log_mutex);
    g_log_callback  = log_callback ? log_callback : log_to_stderr;
    g_log_user_data = log_callback ? user_data : NULL;
    pthread_mutex_unlock(&g_log_mutex);
}

static int min_log_level(void) {
    /* GGMLX_LOG_LEVEL=debug shows debug messages; by default they are dropped */
    static int level = -1;
    if (level < 0) {
        const char * s = getenv("GGMLX_LOG_LEVEL");
        level = (s && strcmp(s, "debug") == 0) ? GGML_LOG_LEVEL_DEBUG : GGML_LOG_LEVEL_INFO;
    }
    return level;
}

void ggmlx_logv(enum ggml_log_level level, const char * fmt, va_list ap) {
    if (level == GGML_LOG_LEVEL_DEBUG && min_log_level() > GGML_LOG_LEVEL_DEBUG) {
        return;
    }
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    ggml_log_callback cb;
    void * ud;
    ggml_log_get(&cb, &ud);
    cb(level, buf, ud);
}

void ggmlx_log(enum ggml_log_level level, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ggmlx_logv(level, fmt, ap);
    va_end(ap);
}

/* ---- errors -------------------------------------------------------------------------------- */

static _Thread_local char g_last_error[512];
static _Thread_local bool g_has_error;

const char * ggmlx_last_error(void) {
    return g_has_error ? g_last_error : NULL;
}

void ggmlx_clear_last_error(void) {
    g_has_error = false;
}

void ggmlx_ok(void) {
    g_has_error = false;
}

bool ggmlx_error_save(char * buf, size_t size) {
    if (!g_has_error || size == 0) {
        return false;
    }
    snprintf(buf, size, "%s", g_last_error);
    return true;
}

void ggmlx_error_restore(const char * saved) {
    snprintf(g_last_error, sizeof g_last_error, "%s", saved);
    g_has_error = true;
}

static bool abort_on_error(void) {
    /* atomic: two threads' first errors may read the variable at once (any of them may write it) */
    static atomic_int mode = -1;
    int m = atomic_load_explicit(&mode, memory_order_relaxed);
    if (m < 0) {
        const char * s = getenv("GGMLX_ON_ERROR");
        m = (s && strcmp(s, "abort") == 0) ? 1 : 0;
        atomic_store_explicit(&mode, m, memory_order_relaxed);
    }
    return m == 1;
}

void ggmlx_errorv(const char * func, const char * fmt, va_list ap) {
    char msg[448];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(g_last_error, sizeof g_last_error, "%s: %s", func ? func : "ggml", msg);
    g_has_error = true;
    ggmlx_log(GGML_LOG_LEVEL_ERROR, "%s\n", g_last_error);
    if (abort_on_error()) {
        ggml_abort(__FILE__, __LINE__, "GGMLX_ON_ERROR=abort: %s", g_last_error);
    }
}

void ggmlx_error(const char * func, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ggmlx_errorv(func, fmt, ap);
    va_end(ap);
}

void ggmlx_ctx_fail(struct ggml_context * ctx, const char * func, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ggmlx_errorv(func, fmt, ap);
    va_end(ap);
    if (ctx) {
        ctx->failed = true;
    }
}

const char * ggmlx_shape_str(const struct ggml_tensor * t, char * buf, size_t n) {
    if (t == NULL) {
        snprintf(buf, n, "(null)");
    } else {
        snprintf(buf, n, "[%lld, %lld, %lld, %lld] %s", (long long) t->ne[0], (long long) t->ne[1],
                 (long long) t->ne[2], (long long) t->ne[3], ggml_type_name(t->type));
    }
    return buf;
}

/* ---- aborts -------------------------------------------------------------------------------- */

static ggml_abort_callback_t g_abort_callback = NULL;

ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback) {
    ggml_abort_callback_t prev = g_abort_callback;
    g_abort_callback = callback;
    return prev;
}

void ggml_abort(const char * file, int line, const char * fmt, ...) {
    char msg[1024];
    int off = snprintf(msg, sizeof msg, "%s:%d: ", file, line);
    if (off < 0 || (size_t) off >= sizeof msg) {
        off = (int) sizeof msg - 1; /* a very long file name: keep what fits, drop the rest */
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + off, sizeof msg - (size_t) off, fmt, ap);
    va_end(ap);
    if (g_abort_callback) {
        g_abort_callback(msg);
    } else {
        fprintf(stderr, "%s\n", msg);
    }
    abort();
}

/* ---- names, version, clocks ---------------------------------------------------------------- */

const char * ggml_status_to_string(enum ggml_status status) {
    switch (status) {
    case GGML_STATUS_ALLOC_FAILED: return "GGML status: error (failed to allocate memory)";
    case GGML_STATUS_FAILED:       return "GGML status: error (operation failed)";
    case GGML_STATUS_SUCCESS:      return "GGML status: success";
    case GGML_STATUS_ABORTED:      return "GGML status: warning (operation aborted)";
    }
    return "GGML status: unknown";
}

#ifndef GGMLX_VERSION
#    define GGMLX_VERSION "0.1.0"
#endif
#ifndef GGMLX_COMMIT
#    define GGMLX_COMMIT "unknown"
#endif

const char * ggml_version(void) {
    return GGMLX_VERSION;
}

const char * ggml_commit(void) {
    return GGMLX_COMMIT;
}

bool ggml_guid_matches(ggml_guid_t guid_a, ggml_guid_t guid_b) {
    if (guid_a == NULL || guid_b == NULL) {
        return guid_a == guid_b;
    }
    return memcmp(guid_a, guid_b, sizeof(ggml_guid)) == 0;
}

void ggml_time_init(void) {
    /* CLOCK_MONOTONIC needs no set-up; kept for callers that expect to call it */
}

int64_t ggml_time_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + (int64_t) ts.tv_nsec / 1000000;
}

int64_t ggml_time_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + (int64_t) ts.tv_nsec / 1000;
}

int64_t ggml_cycles(void) {
    return (int64_t) clock();
}

int64_t ggml_cycles_per_ms(void) {
    return CLOCKS_PER_SEC / 1000;
}

FILE * ggml_fopen(const char * fname, const char * mode) {
    if (fname == NULL || mode == NULL) {
        ggmlx_error(__func__, "file name or mode is NULL");
        return NULL;
    }
    return fopen(fname, mode);
}
