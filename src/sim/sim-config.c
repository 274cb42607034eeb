/*
 * sim-config.c -- how many SIM devices there are and what they do: ggmlx_sim_configure(), or
 * the GGMLX_SIM_* environment variables, read once when the devices are fixed.
 */
#ifndef GGML_BACKEND_DL

#include "sim-impl.h"
#include "parse-bytes.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

static pthread_mutex_t           g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool                      g_fixed;
static bool                      g_configured;
static struct ggmlx_sim_settings g_settings;

/* the defaults: no device, 1 GiB each, one compute thread, nothing refused, no chaos */
static void defaults(struct ggmlx_sim_settings * s) {
    memset(s, 0, sizeof *s);
    s->memory_limit = (size_t) 1 << 30;
    s->n_threads    = 1;
}

/* ---- ggmlx_sim_configure ------------------------------------------------------------------- */

static bool check_config(const char * func, const struct ggmlx_sim_config * cfg) {
    if (cfg == NULL) {
        ggmlx_error(func, "cfg is NULL");
        return false;
    }
    if (cfg->n_devices < 0 || cfg->n_devices > GGMLX_SIM_MAX_DEVICES) {
        ggmlx_error(func, "n_devices = %d is out of range (0 to %d)", cfg->n_devices, GGMLX_SIM_MAX_DEVICES);
        return false;
    }
    if (cfg->memory_limit > GGMLX_SIM_MAX_MEMORY) {
        ggmlx_error(func, "memory_limit = %zu bytes is more than a SIM device can have (%zu)", cfg->memory_limit,
                    GGMLX_SIM_MAX_MEMORY);
        return false;
    }
    if (cfg->n_threads < 0 || cfg->n_threads > GGML_MAX_N_THREADS) {
        ggmlx_error(func, "n_threads = %d is out of range (0 for the default, up to %d)", cfg->n_threads,
                    GGML_MAX_N_THREADS);
        return false;
    }
    if (cfg->n_refused_ops < 0 || (cfg->n_refused_ops > 0 && cfg->refused_ops == NULL)) {
        ggmlx_error(func, "refused_ops is NULL or n_refused_ops = %d is negative", cfg->n_refused_ops);
        return false;
    }
    for (int i = 0; i < cfg->n_refused_ops; i++) {
        const int op = (int) cfg->refused_ops[i];
        if (op <= (int) GGML_OP_NONE || op >= (int) GGML_OP_COUNT) {
            ggmlx_error(func, "refused_ops[%d] = %d is not an op (1 to %d)", i, op, (int) GGML_OP_COUNT - 1);
            return false;
        }
    }
    return true;
}

bool ggmlx_sim_configure(const struct ggmlx_sim_config * cfg) {
    if (!check_config(__func__, cfg)) {
        return false;
    }
    struct ggmlx_sim_settings s;
    defaults(&s);
    s.n_devices  = cfg->n_devices;
    s.chaos_seed = cfg->chaos_seed;
    if (cfg->memory_limit > 0) {
        s.memory_limit = cfg->memory_limit;
    }
    if (cfg->n_threads > 0) {
        s.n_threads = cfg->n_threads;
    }
    for (int i = 0; i < cfg->n_refused_ops; i++) {
        s.refused[cfg->refused_ops[i]] = true;
    }
    pthread_mutex_lock(&g_lock);
    const bool fixed = g_fixed;
    if (!fixed) {
        g_settings   = s;
        g_configured = true;
    }
    pthread_mutex_unlock(&g_lock);
    if (fixed) {
        ggmlx_error(__func__, "SIM devices are fixed already (the backend registry or ggmlx_sim_reg was used): "
                              "configure them before the first registry call");
        return false;
    }
    ggmlx_ok();
    return true;
}

/* ---- the environment ----------------------------------------------------------------------- */

/* the variable's value, NULL when unset or empty */
static const char * env(const char * name) {
    const char * v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static bool parse_int(const char * name, const char * v, int lo, int hi, int * out) {
    char * end;
    errno = 0;
    const long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) {
        ggmlx_error(name, "'%s' is not a whole number from %d to %d", v, lo, hi);
        return false;
    }
    *out = (int) n;
    return true;
}

/* bytes, with an optional K, M, G or T suffix (powers of 1024; a trailing B or iB is allowed) */
static bool parse_size(const char * name, const char * v, size_t * out) {
    size_t n = 0;
    if (!ggmlx_parse_bytes(v, &n) || n > GGMLX_SIM_MAX_MEMORY) {
        goto err;
    }
    *out = n;
    return true;
err:
    ggmlx_error(name, "'%s' is not a size in bytes up to %zu (a number with an optional K, M, G or T suffix)", v,
                GGMLX_SIM_MAX_MEMORY);
    return false;
}

static bool parse_ops(const char * name, const char * v, bool * refused) {
    const char * p = v;
    while (*p) {
        while (*p == ',' || isspace((unsigned char) *p)) {
            p++;
        }
        size_t n = strcspn(p, ",");
        while (n > 0 && isspace((unsigned char) p[n - 1])) {
            n--;
        }
        if (n == 0) {
            break;
        }
        int found = -1;
        for (int op = 1; op < GGML_OP_COUNT && found < 0; op++) {
            const char * opn = ggml_op_name((enum ggml_op) op);
            if (opn != NULL && strlen(opn) == n && strncasecmp(opn, p, n) == 0) {
                found = op;
            }
        }
        if (found < 0) {
            ggmlx_error(name, "'%.*s' is not an op name (as ggml_op_name gives them, e.g. MUL_MAT)", (int) n, p);
            return false;
        }
        refused[found] = true;
        p += n;
        while (*p != '\0' && *p != ',') {
            p++;
        }
    }
    return true;
}

static bool parse_u64(const char * name, const char * v, uint64_t * out) {
    char * end;
    errno = 0;
    const unsigned long long n = strtoull(v, &end, 10);
    if (!isdigit((unsigned char) v[0]) || errno != 0 || *end != '\0') {
        ggmlx_error(name, "'%s' is not a whole number (0 turns chaos mode off)", v);
        return false;
    }
    *out = n;
    return true;
}

/* s from the environment; false (reported) when a variable is malformed */
static bool from_env(struct ggmlx_sim_settings * s) {
    const char * v;
    if ((v = env("GGMLX_SIM_DEVICES")) && !parse_int("GGMLX_SIM_DEVICES", v, 0, GGMLX_SIM_MAX_DEVICES, &s->n_devices)) {
        return false;
    }
    if ((v = env("GGMLX_SIM_MEMORY")) != NULL) {
        size_t bytes;
        if (!parse_size("GGMLX_SIM_MEMORY", v, &bytes)) {
            return false;
        }
        if (bytes > 0) {
            s->memory_limit = bytes;
        }
    }
    if ((v = env("GGMLX_SIM_THREADS")) != NULL) {
        int n;
        if (!parse_int("GGMLX_SIM_THREADS", v, 0, GGML_MAX_N_THREADS, &n)) {
            return false;
        }
        if (n > 0) {
            s->n_threads = n;
        }
    }
    if ((v = env("GGMLX_SIM_REFUSE_OPS")) && !parse_ops("GGMLX_SIM_REFUSE_OPS", v, s->refused)) {
        return false;
    }
    if ((v = env("GGMLX_SIM_CHAOS")) && !parse_u64("GGMLX_SIM_CHAOS", v, &s->chaos_seed)) {
        return false;
    }
    return true;
}

const struct ggmlx_sim_settings * ggmlx_sim_settings_fix(void) {
    pthread_mutex_lock(&g_lock);
    if (!g_fixed) {
        if (!g_configured) {
            defaults(&g_settings);
            if (!from_env(&g_settings)) {
                /* a typo must not quietly give a different test: no device rather than a guess */
                ggmlx_log(GGML_LOG_LEVEL_ERROR, "SIM: malformed GGMLX_SIM_* variable (see above): no SIM device\n");
                defaults(&g_settings);
            }
        }
        g_fixed = true;
    }
    pthread_mutex_unlock(&g_lock);
    return &g_settings;
}

#endif /* GGML_BACKEND_DL */
