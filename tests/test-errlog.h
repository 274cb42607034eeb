/*
 * test-errlog.h -- checking the error contract in a test: a log callback that counts ERROR
 * messages, and assertions that the call just made did (or did not) record and log an error.
 * A suite installs the callback in its setup: ggml_log_set(count_log, NULL).
 */
#ifndef GGMLX_TEST_ERRLOG_H
#define GGMLX_TEST_ERRLOG_H

#include <criterion/criterion.h>

#include "ggml.h"
#include "ggmlx.h"

static int g_n_errors;

static inline void count_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) text;
    (void) user_data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        __atomic_fetch_add(&g_n_errors, 1, __ATOMIC_RELAXED); /* workers log too */
    }
}

/* the call just made failed: an error was recorded and logged */
#define ASSERT_ERROR()                                                                        \
    do {                                                                                      \
        cr_assert_not_null(ggmlx_last_error(), "an error is recorded");                       \
        cr_assert_gt(g_n_errors, 0, "the error is logged");                                   \
        ggmlx_clear_last_error();                                                             \
        g_n_errors = 0;                                                                       \
    } while (0)

#define ASSERT_NO_ERROR() cr_assert_null(ggmlx_last_error(), "unexpected error: %s", ggmlx_last_error())

#endif /* GGMLX_TEST_ERRLOG_H */
