/*
 * host-alias.h -- memory the host cannot touch at one address but can at another.
 *
 * A simulated device's buffer is mapped twice: tensor->data points into a PROT_NONE view (so a
 * host read faults, as on a GPU), and the device's worker and the copy paths use a read-write
 * view of the same pages. This table tells the two apart for code that must not know about
 * SIM devices: the host backends (CPU and SIM, in libggml-cpu) translate through it when they
 * copy from or compute on such memory.
 *
 * Lookups are cheap (binary search under a read lock) and done when work is enqueued, never by
 * a worker, so a buffer freed after enqueueing cannot race with its own lookup.
 */
#ifndef GGMLX_HOST_ALIAS_H
#define GGMLX_HOST_ALIAS_H

#include "ggmlx-backend-impl.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * [hidden, hidden + size) is reachable at rw; owner tells whose memory it is (a device).
 * false (error recorded) when the host is out of memory or the range overlaps another.
 */
bool ggmlx_alias_add(const void * hidden, void * rw, size_t size, const void * owner);

/* forgets the range starting at hidden (nothing when there is none) */
void ggmlx_alias_remove(const void * hidden);

/*
 * The read-write address of p when p lies in a registered range, else NULL. *owner (opt) is
 * the range's owner. Empty ranges never match, and neither does one-past-the-end.
 */
void * ggmlx_alias_lookup(const void * p, const void ** owner);

#endif /* GGMLX_HOST_ALIAS_H */
