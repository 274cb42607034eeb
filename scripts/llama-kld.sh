# shellcheck shell=bash
# Sourced by llama-compare.sh, llama-gpu-pack.sh and llama-gpu.sh: one llama-perplexity
# --kl-divergence run and the statistics it prints.
#
# At llama.cpp 4df29be4 the common library's logger is a thread that is never joined (its object
# is leaked on purpose), so a program that exits right after printing can lose the end of its
# output: here, about one --kl-divergence run in three on a short window ends with exit status 0
# but without its "KL divergence statistics" block. The run is cheap, so it is repeated.

KLD_TRIES=${KLD_TRIES:-6}

# kld_stats LOG: "mean max top" parsed from a --kl-divergence run's output, or nothing.
kld_stats() {
    awk '
        /^Mean +KLD:/    { mean = $3 }
        /^Maximum KLD:/  { max = $3 }
        /^Same top p:/   { top = $4 }
        END { if (mean != "" && max != "" && top != "") print mean, max, top }
    ' "$1"
}

# kld_run LOG CMD...: runs CMD (a llama-perplexity --kl-divergence command line) with its output
# in LOG until the statistics appear, at most KLD_TRIES times; prints "mean max top" and returns
# 0, or returns 1 (at once when CMD fails: only a lost tail is retried).
kld_run() {
    local log=$1 i
    shift
    for ((i = 1; i <= KLD_TRIES; i++)); do
        "$@" >"$log" 2>&1 || return 1
        if [ -n "$(kld_stats "$log")" ]; then
            kld_stats "$log"
            return 0
        fi
    done
    return 1
}
