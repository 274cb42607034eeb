/*
 * test-queues.h -- helpers of the suites that drive backend queues by hand: opening SIM and CPU
 * backends (checked), short sleeps, and waiting until a queue has settled. For Criterion suites.
 */
#ifndef GGMLX_TEST_QUEUES_H
#define GGMLX_TEST_QUEUES_H

#include <criterion/criterion.h>

#include "host-backend.h"
#include "ggml-backend.h"
#include "ggmlx-backend.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"

#include <stdio.h>
#include <time.h>

static inline const char * last_error(void) {
    return ggmlx_last_error() ? ggmlx_last_error() : "";
}

static inline void nap_us(long us) {
    nanosleep(&(struct timespec){ 0, us * 1000 }, NULL);
}

/* a backend of device SIMi */
static inline ggml_backend_t sim(int i) {
    char name[16];
    snprintf(name, sizeof name, "SIM%d", i);
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(name);
    cr_assert_not_null(dev, "no device %s: %s", name, last_error());
    cr_assert_eq(ggml_backend_dev_type(dev), GGML_BACKEND_DEVICE_TYPE_GPU, "%s is a GPU-type device", name);
    ggml_backend_t b = ggml_backend_dev_init(dev, NULL);
    cr_assert_not_null(b, "%s: %s", name, last_error());
    cr_assert(ggmlx_backend_is_sim(b));
    return b;
}

/* a CPU backend with init parameters (NULL: the defaults) */
static inline ggml_backend_t cpu_with(const char * params) {
    ggml_backend_t b = ggml_backend_dev_init(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), params);
    cr_assert_not_null(b, "%s", last_error());
    cr_assert_not(ggmlx_backend_is_sim(b));
    return b;
}

static inline ggml_backend_t cpu(void) {
    return cpu_with(NULL);
}

/*
 * Bounded: until b's queue has run everything or its worker is blocked in an event wait. With
 * the waits in place the queue stays blocked; without them (drop-event-waits) this is what
 * gives the queue time to run past the missing wait, so a test of the order fails every time.
 */
static inline void settle(ggml_backend_t b) {
    struct ggmlx_host_backend * hb = ggmlx_host_backend_of(b);
    cr_assert_not_null(hb, "%s is a host backend", ggml_backend_name(b));
    struct ggmlx_queue * q = ggmlx_host_backend_queue(hb);
    cr_assert_not_null(q, "%s has a queue", ggml_backend_name(b));
    for (int i = 0; i < 100000; i++) {
        if (ggmlx_backend_queue_pending(b) == 0 || ggmlx_queue_waiting(q)) {
            return;
        }
        nap_us(100);
    }
    cr_assert_fail("queue of %s did not settle within 10 s", ggml_backend_name(b));
}

#endif /* GGMLX_TEST_QUEUES_H */
