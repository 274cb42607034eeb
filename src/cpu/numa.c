/*
 * numa.c -- ggml_numa_init and ggml_is_numa: the NUMA nodes Linux lists in sysfs. ggmlx does not
 * place memory or threads by node, so the strategy is accepted, not acted on.
 */
#include "ggml-cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>

#define MAX_NODES 1024

static pthread_mutex_t g_numa_lock = PTHREAD_MUTEX_INITIALIZER;
static bool            g_numa_done;
static int             g_numa_nodes;

static int count_nodes(void) {
    int n = 0;
    for (; n < MAX_NODES; n++) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", n);
        if (stat(path, &st) != 0) {
            break;
        }
    }
    return n;
}

void ggml_numa_init(enum ggml_numa_strategy numa) {
    pthread_mutex_lock(&g_numa_lock);
    /* as upstream, a second call changes nothing */
    if (!g_numa_done) {
        /* counted whatever the strategy, as upstream: ggml_is_numa describes the machine */
        (void) numa;
        g_numa_nodes = count_nodes();
        g_numa_done  = true;
    }
    pthread_mutex_unlock(&g_numa_lock);
}

bool ggml_is_numa(void) {
    pthread_mutex_lock(&g_numa_lock);
    const bool numa = g_numa_nodes > 1;
    pthread_mutex_unlock(&g_numa_lock);
    return numa;
}
