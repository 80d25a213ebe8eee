#pragma once

// RTCOSIM_SIGNAL_LOOP: a per-signal loop of the frame path (a finiteness
// sweep, a block's fill, a polynomial's evaluation) compiled twice on
// x86-64: for AVX2 and for the baseline's SSE2. The dynamic loader picks one
// when the program starts (an ifunc), so no frame pays for the choice, and
// AVX2 takes four doubles a lane where SSE2 takes two.
//
// The AVX2 version has no FMA (`avx2` alone does not enable it, and the
// build sets -ffp-contract=off): each element sees the same operations in
// the same order as in the SSE2 version, so the results are the same bits
// on any x86-64 (every example's recording is compared byte for byte).
//
// Only a non-virtual function can be cloned: a virtual one calls a free
// function that carries the loop. Elsewhere the macro is empty: another
// architecture, RTCOSIM_NO_SIGNAL_CLONES, and sanitizer builds, whose
// instrumented ifunc resolver runs before the sanitizer's runtime is set up
// (ThreadSanitizer crashes there); they test the SSE2 version.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RTCOSIM_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RTCOSIM_SANITIZED 1
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RTCOSIM_NO_SIGNAL_CLONES) && \
    !defined(RTCOSIM_SANITIZED)
#define RTCOSIM_SIGNAL_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define RTCOSIM_SIGNAL_LOOP
#endif
