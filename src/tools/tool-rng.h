/*
 * tool-rng.h -- the random numbers of the programs in src/tools (the demo and the conformance
 * runner): splitmix64, tiny and the same numbers on every platform, so a seed reproduces a run
 * anywhere. One stream per check or case, so what one draws does not depend on which others ran.
 */
#pragma once

#include <stdint.h>

static inline uint64_t tool_rng_seed(uint64_t seed, uint64_t stream) {
    return seed * 0x9e3779b97f4a7c15ull ^ (stream + 1) * 0xd1b54a32d192ed03ull;
}

static inline uint64_t tool_rng_next(uint64_t * state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static inline double tool_rng_unit(uint64_t * state) {
    return (double) (tool_rng_next(state) >> 11) * 0x1.0p-53;
}
