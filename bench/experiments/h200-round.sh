#!/usr/bin/env bash
# Device calls of 2026-12-05 evening (perf-notes §32): main's build with the
# pushed split-K reduction (2a29bdf) and the fused-call cuBLASLt margin (a040a3b),
# checked whole and timed (meant for the H200; round 1 got an H100), and the
# early residual read (PART=3). Run ON the device from the
# repository root after scripts/build-gpu.sh (carry build-gpu/carry); everything
# is written under $OUT/r as it runs, so a call cut off at its limit still
# returns what finished.
#   PART=1: the GPU suite, pytest and the sanitizer subset (racecheck through the
#           pulled reduction, TGV_SPLIT_K_PULL=1), then the decoder-layer chain
#           untuned, twice, with the dispatch log (the plan of every stage).
#   PART=2: the chain untuned, twice (the first with the dispatch log; CHAIN=0
#           leaves it out), the untuned corpus back to back and between other
#           kernels, torch's F.linear beside us, then e2e_decode --quick --no-tune
#           at batch 1, 4, 16. MODES=b2b runs the corpus back to back only;
#           E2E=0 leaves e2e out.
#   PART=3: a kernel change B against main as A (written for the early residual
#           read, perf-notes §32, in src/ since 2026-12-06). Stage it: build main
#           with scripts/build-gpu.sh and keep its bin/tgv-bench and
#           bin/libtgv_gemm.so as A/ in build-gpu/carry/var.tgz; apply the change
#           and build again (B). Runs the GPU suite, pytest and the sanitizer subset
#           on B, the chain A B A B, then e2e_decode --quick --no-tune at batch 1, 4,
#           16 on B. E2E=0, PYTEST=0, SANITIZE=0, CHECK=0 leave those out (a short
#           call); ROUNDS=n alternates the chain n times (default 2). The
#           host tests can stay out of the carry (rm build-gpu/carry/bin/tgv_host_tests:
#           the carry is then ~49 MiB with var.tgz, under the tool's 64).
#   PART=4: the chase of 2026-12-06's launch failure (perf-notes §34): the corpus
#           back to back (after the chain, as then; CHAIN=0 leaves it out) over the
#           twelve shapes before and at the one it died on,
#           RUNS times (default 6; odd runs pushed split-K, even runs pulled), each
#           run's exit and last lines kept; then compute-sanitizer memcheck over the
#           corpus bench on the shape it died on (MEMCHECK_M, default M 1, 8, 32 and
#           64: the tgv backend's split-K plan there).
#   PART=5: the candidate sweep the cost model is fitted to, back to back only
#           (weights >= MIN_MB, default 4)
#           (isolated.py --chain-only): SWEEP_M (default 1,4,16,32), SPLITS (default
#           1,2,3,4,5,6,8), SWEEP_S seconds at most (default 540).
#   PART=6: a dispatcher change B against A, staged as for PART=3: the chain A B
#           A B (ROUNDS), then the corpus back to back on B and on A.
#   PART=7: which plan of each decoder-layer stage is fastest inside the layer
#           (bench/experiments/chain_plans.py, perf-notes §30 on an H100, never run
#           on the H200, where the 8B layer's big weights trail torch, §36):
#           MODEL (default llama3.1-8b), ROUNDS (default 1); the gated gate_up takes its
#           variants through TGV_EXP_TUNED_GATED=1 (inert from §47 until §51).
#   PART=8: each CTA's K walk rotated (perf-notes §37), on a build with
#           bench/experiments/k-rotate.patch applied (git apply, then
#           scripts/build-gpu.sh): the Tgv and Epilogue GPU tests with the rotation
#           on (stride ROT, default 7), then the chain and the layers' and other
#           large weights back to back with it off and on, alternated.
#   PART=9: row-segments (bench/experiments/row_segments.cu, built by
#           bench/experiments/row-segments.sh): a weight read in 64-row slabs, S
#           bytes of each row per step, against one contiguous run (perf-notes §37);
#           seconds.
#   PART=10: cta_k = 256 (512 contiguous bytes of each W row per stage), on a build
#           with bench/experiments/cta-k-256.patch applied (tactics 24-29: the six
#           tiles of <= 32 tokens; never in auto's candidates). Carry bin/
#           libtgv_gemm.so, bin/tgv_gpu_tests and python/ (drop tgv-bench and the host
#           tests to stay under 64 MiB). The GPU tests of tactics 24-29, then
#           isolated.py's eleven layer and large shapes at M 1, 16, every tactic of
#           the covering token tile at split 1 and 2, back to back and between kernels.
#   PART=11: the split-K fault's bisection (perf-notes §38), each run its own process
#           under its own timeout (a fault ends a process; a hang is killed):
#           bench/experiments/split_stress.py on the library's own plans (split 1 since
#           §38: must pass), then an explicit split 2 with PDL off (pushed, pulled),
#           split 2 on the 64x64x64 tile (no K groups) at 3840x4096 M = 64, stream-K
#           (no clusters) at 2048x4096 M = 32, and the faulting case last (split 2,
#           PDL on, pushed; a lightweight core dump in $OUT/r). STRESS_S seconds
#           each (default 20). On a build with
#           split-k-late-trigger.patch applied, the same runs test it.
#   PART=12-18: perf-notes §39's bisection of the same fault (each branch says what it
#           runs): variant libraries side by side (12), the library's own plans and each
#           reduction alone (13), cuda-gdb on a lightweight core dump (14, 16) or attached
#           to a run held at its fault with the faulting CTA's barriers dumped (15, 17),
#           pacing overrides on an experiment build (18).
#   PART=19: the replay stress that must pass (perf-notes §39): the library's own plans on
#           five points (every narrow K-group tile, split-K among them), split 2 pushed alone, then
#           stream-K, pushed and pulled among every graph (MORE=1 adds the pulled alone and
#           the 64x64 tile at 3840x4096 M = 64), STRESS_S seconds each; then the split-K,
#           stream-K, K-group and paced GPU tests (TEST_FILTER); CORPUS=1 adds the
#           untuned corpus back to back. Carry bin/libtgv_gemm.so, bin/tgv_gpu_tests,
#           bin/tgv-bench and python/.
#   PART=22: the persistent whole-tile schedule (perf-notes §44), on a build with
#           bench/experiments/persistent-schedule.patch applied (scripts/build-gpu.sh,
#           then bench/experiments/row-segments.sh; ~350 s): the stream-K GPU tests run
#           persistent, the eleven layer shapes of isolated.py at M 1, 16 as split 1 and
#           persistent, the chain with auto's many-tile split-1 plans persistent and not.
#   PART=23: pacing as planned, off, and on the first wave only (perf-notes §44), on a
#           build with bench/experiments/pace-first-wave.patch applied (~450 s): the paced
#           and PDL GPU tests in each mode, the chain alternated, six layer weights
#           at M 1, 16 (split 1, 2; back to back and between kernels; multi-wave grids:
#           28672 and 14336 rows at M = 1, the split-2 plans).
#   PART=24: first-wave pacing (main) against every CTA paced, on a build with
#           pace-all.patch applied (perf-notes §45): check, chain, corpus b2b and iso.
#   PART=25: the chain with pacing on the first wave, on every CTA, and on every CTA of
#           gated launches only (pace-all.patch, perf-notes §45), alternated ROUNDS (3).
#   PART=26: gated and plain weights with a gated launch's later waves paced (main) or
#           not, back to back and between kernels (pace-all.patch, perf-notes §45).
#   PART=27: backend=cublas against torch with and without torch's bf16 split-K
#           reductions (cublas_vs_torch.py --torch-fp32-reduction), ~40 s, any build.
#   PART=28: a grid-level "started alone" test for pacing against main (grid-alone.patch,
#           perf-notes §45): GPU tests with it on, chain, corpus b2b and iso, ~500 s.
#   PART=29: the first call of a session on main's build (scripts/build-gpu.sh), whatever
#           card came (perf-notes §46): on an H200 the whole check (CHECK_S, default
#           280), the chain, the corpus back to back and the decode step (~520 s); on
#           an H100 the M = 32 harness probe (m32-probe.sh) and the chain (~130 s).
#   PART=30: a plain launch left unpaced where its captured predecessor is our own SM90
#           kernel (pace-after-ours.patch, perf-notes §46) against main, one build: the
#           graph, PDL and paced GPU tests with it on, the chain alternated (ROUNDS,
#           default 2), the corpus back to back and between kernels each way (~480 s).
#   PART=31: the harness probe (harness-probe.sh, perf-notes §47), the decode step untuned
#           and tuned (e2e_decode.py --quick, autotune writing a file of its own), then the
#           sweep (PART=5) at SWEEP_M (default 16,32) until TOTAL_S (default 560) in all.
#           PIN=1 adds the corpus with 128x32x128 split 2 pinned for 5120x2048 and
#           4608x2048 at M = 32 (pin_tuning.py) against the untuned corpus.
#   PART=32: the decode step untuned and tuned (the tuner's default, then neighbours="kernels"),
#           the tuning files kept, then isolated.py
#           on small grids with the corpus's calls and weight copies, the corpus bench on them
#           replayed on the legacy stream and on a side stream, auto's and torch's graphs
#           each alone (perf-notes §47, ~300 s).
#   PART=33: the corpus with each timed replay after another graph and after its own
#           (--warm-replays 1) on the harness shapes, then whole both ways, then the sweep
#           at SWEEP_M until TOTAL_S (perf-notes §48, ~540 s).
#   PART=34: tgv-trace on one-wave grids after their own graph and after another's, with the
#           library's L2 hints and without, each CTA's SM recorded (perf-notes §48; build with
#           bench/experiments/trace.sh, ~90 s).
#   PART=35: the data-parallel + stream-K hybrid (bench/experiments/sk-hybrid.patch applied,
#           TGV_EXP_SK_HYBRID=1 or 2): stream-K GPU tests under 0 / 1 / 2, then isolated.py on
#           multi-wave weights, plain and gated, split 1 against stream-K, 0 / 1 / 2 twice (~450 s).
#   PART=36: PART=34 then PART=33 (TOTAL_S default 480), one call (~560 s).
#   PART=35, 37: history (the patch landed on main with perf-notes §50; TGV_EXP_SK_WAVES is gone).
#   PART=37: the hybrid inside the layer (perf-notes §49) on a build with sk-hybrid.patch: the
#           GPU suite, the hybrid's tests and memcheck, the chain and the corpus with every
#           partial-wave grid stream-K (TGV_EXP_SK_WAVES=1) under hybrid 0 / 1 / 2 (~400 s).
#           SUITE=0, MEMCHECK=0, CORPUS=0 leave those steps out; CORPUS_M, the corpus's M.
#   PART=38: the hybrid as the library plans it (perf-notes §50, branch land): the GPU suite,
#           memcheck over the stream-K tests, those tests with every whole wave taken
#           (TGV_EXP_SK_HYBRID=2), the chain as planned and with the gated gate_up as the
#           hybrid (TGV_EXP_SK_GATED=1), ROUNDS (2) times, the corpus back to back (~400 s). The
#           gtest logs stay on the device (the tool returns 8 files); r/summary.txt has
#           each run's counts and first failures, printed again last. SUITE=0 runs the
#           stream-K, batch and repeatability tests instead of the whole suite;
#           CORPUS=0 leaves the corpus out (~150 s with both); then isolated.py on three
#           multi-wave weights, plain and gated, split 1 against the hybrid (ISO=0: not).
#   PART=39: PART=38 with ISO=0, then PART=7 (perf-notes §51's next H200 call, ~330 s; the
#           output ends with PART=38's summary; eight files come back, the tool's limit).
#   PART=40: issue 11's decode step untuned and tuned at batches 1, 4, 16, then the sweep
#           (PART=5, SWEEP_M default 1,4,16,32) until TOTAL_S (default 560) in all.
#   PART=41: two K groups on every narrow 64-row tile (TGV_EXP_K_GROUPS=2, §52): its GPU
#           tests, one group against two on large weights (isolated.py), then PART=40's
#           decode step (~450 s).
#   PART=42: the chain under main's plans and each experiment switch (~60 s a round).
#   PART=43: pacing off (TGV_EXP_W_LEAD=0) against main: the decode step, the corpus
#           between kernels and back to back, the chain (~480 s; perf-notes §52).
#   PART=44: the corpus in 5 rotated rounds, 8 and 16 rounds of a Williams design
#           (--balanced-rounds; ~390 s).
#   PART=45: tgv-bench --host-overhead, every backend, M 1 and 16 (~60 s).
#   PART=46: the H100's consistent losers at M = 16 / 32 (perf-notes §53: 128x32x64 split 1 on
#           ~20 MB weights 4-10% behind torch in every corpus run since b71bd03), every covering
#           candidate at split 1, 2 and stream-K back to back, torch and auto beside, ROUNDS (2).
#   PART=47: pacing off on the fused stages only (TGV_EXP_W_LEAD=0 with TGV_EXP_W_LEAD_ON=
#           fused|gated|residual, perf-notes §53): the chain under main, pacing off everywhere and
#           on each subset, ROUNDS (2), then the decode step main / fused-only alternated twice.
#   PART=48: a read whose CTAs claim pieces of W as they go against equal shares
#           (bench/experiments/balance.sh, perf-notes §54; seconds).
#   PART=49: the gated gate_up on a persistent grid of whole tiles (TGV_EXP_SK_GATED=1
#           TGV_EXP_SK_HYBRID=3, perf-notes §55): stream-K and batch GPU tests with it, the
#           gated weights alone (ISO rounds, 2), the chain (main / gated hybrid / persistent),
#           the decode step; TESTS=0, CHAIN=0, E2E=0 leave those out.
#   PART=50: the 8B layer's gate_up plans inside the layer (chain_plans.py --stage gate_up),
#           stream-K variants as the hybrid, then as persistent grids (TGV_EXP_SK_HYBRID=3).
#   PART=52: the 8B layer's gate_up -> down_proj boundary, CTA by CTA (tgv-layer-trace, built by
#           bench/experiments/layer-trace.sh; carry that binary alone), main / persistent / hybrid.
#   PART=53: early launch_dependents (TGV_EXP_EARLY_TRIGGER, perf-notes §58): the PDL,
#           graph, stream-K and epilogue GPU tests with it on every grid, the chain under
#           main / multi-wave grids / every grid alternated, the decode step and the corpus
#           (M 1 4 16, back to back) main against multi-wave grids (~420 s).
#   PART=54: PART=53's follow-up: the chain under main / every grid / one-wave grids only
#           (TGV_EXP_EARLY_TRIGGER=2, 3) alternated, the decode step main against 3 (~230 s).
#   PART=55: perf-notes §58's rule as a candidate default, TGV_EXP_EARLY_TRIGGER=4 (one-wave
#           grids under 48 MB, or gated): the whole GPU suite with it, the chain under main / 3 / 4 /
#           3 with TGV_EXP_PACE_WAITED=1 alternated, the decode step main against 4, twice (~380 s).
#   PART=56: the corpus (M 1 4 16) back to back and between kernels, main against
#           TGV_EXP_EARLY_TRIGGER=4 (and back to back =3 with TGV_EXP_PACE_WAITED=1: every
#           one-wave grid early, its waited CTAs paced), and the split-K replay stress with 4
#           (~480 s).
#   PART=58: PART=55 and 56's decision in one call, for a session with little device time
#           (~440 s): the PDL tests under TGV_EXP_EARLY_TRIGGER=4, the corpus (M 1 4 16) back
#           to back main / 4, the chain main / 4 alternated twice, the decode step main / 4
#           once, then the corpus between kernels main / 4 (last: cut off first).
#           Since 7a7a68e the plan is =4 itself (Plan::trigger_at_entry): in PART=53-58 "main"
#           then means =4, and TGV_EXP_EARLY_TRIGGER=0 is the trigger after the last load.
#   PART=59: the early trigger as the planner's default (Plan::trigger_at_entry, perf-notes
#           §59) checked whole: PART=1 (GPU suite, pytest, sanitizers, the chain twice with the
#           dispatch log), the corpus (M 1 4 16) back to back, the decode step once (~330 s).
#   PART=60: the issues' H200 criteria in one call, as the library stands (~540 s): the whole
#           check (GPU suite, pytest, sanitizers), the corpus back to back at every M (1-128: auto,
#           backend=cublas, torch, the stream floor), the chain twice (the first with the dispatch
#           log), then the decode step untuned and tuned at batches 1, 4, 16 in what time is left
#           (TOTAL_S, default 570).
#   PART=61: whichever card comes: on an H200 PART=60; on another, the 70B-TP8 layer's plans one
#           stage at a time (PART=7, MODEL=llama3.1-70b-tp8, two rounds: does any plan take the
#           16-token layer's extra ~3.5 us back, perf-notes §60), then PART=57's trace when
#           build-gpu/carry/tgv-trace was built (bench/experiments/trace.sh).
#   PART=62: PART=58's decision call for any switch setting VAR (default every one-wave grid
#           early with its waited CTAs paced: "TGV_EXP_EARLY_TRIGGER=3 TGV_EXP_PACE_WAITED=1",
#           perf-notes §60's trace) against main, named VN (default et3p): its PDL tests, the corpus
#           (M 1 4 16) back to back, the chain alternated twice, the decode step once each way, the
#           corpus between kernels last (~300 s on an H100). Next: VAR=TGV_EXP_EARLY_TRIGGER=5 VN=et5
#           (sm90_paced_early's grids early and paced, perf-notes §60's end).
#   PART=63: a session's first call, whichever card comes: on an H200 PART=60 (the issues'
#           criteria, never run there on today's kernels); on another card PART=66 without ISO
#           and PART=67 (the early trigger above 16 tokens and the 64-token tile's partial-grid
#           factor, perf-notes §64; PART=65's margin was decided there), ~550 s.
#   PART=64: PART=63 for ~4 minutes of device time: on an H200 the corpus at every M, the chain
#           and the decode step untuned (no check); else PART=67.
#   PART=66: the early trigger above 16 tokens (perf-notes §64: on an H100 the 64-token
#           tile's one-wave grids of 5-30 MB ran 5-13% slower back to back after it landed):
#           the corpus back to back at M 32, 64, 128 under main, TGV_EXP_EARLY_TRIGGER=0 and
#           the bound at 8 MB (=4 with TGV_EXP_EARLY_TRIGGER_MB=8), alternated ROUNDS times
#           (default 2), then between other kernels at M = 64, main and =0 (ISO=0 leaves it
#           out); ~350 s. At M > 16 TGV_EXP_EARLY_TRIGGER=0 plans as
#           trigger-16.patch would (ungated calls; the corpus has no gated ones), so this
#           decides the patch: compare with scripts/corpus_rounds_ab.py --groups.
#   PART=67: the 64-token tile's partial-grid factor on an H100 (perf-notes §64: main prices
#           grids of 66-99 CTAs on >= 48 MB with 0.15, emulated +8-9% on 16 shapes): the corpus
#           back to back at M = 64 under main, TGV_EXP_H100_WIDE_PART=${WP:-0.75} (the plans before),
#           TGV_EXP_EARLY_TRIGGER=0 and both, alternated ROUNDS times (default 2); ~200 s. Inert
#           on an H200 (its 64-token plans are cuBLASLt's).
#   PART=65: the cuBLASLt margin above 32 tokens, 0.10 (main) against
#           TGV_EXP_CUBLAS_MARGIN_LARGE_M=${MARGIN:-0.05} (perf-notes §61's emulation, §63): the
#           corpus back to back at M 64 and 128, alternated ROUNDS times (default 2), CORPUS_S
#           each (default 60); any card.
#   PART=57: why early launch_dependents slows large one-wave weights (perf-notes §58):
#           tgv-trace (bench/experiments/trace.sh; carry build-gpu/carry/tgv-trace alone) back
#           to back on an 80-CTA 262 MB weight, a 64-CTA 117 MB one and a 64-CTA 8 MB one, the
#           trigger after the last load / at entry, unpaced and paced (waited CTAs too), each
#           CTA's SM kept (~60 s).
#   PART=21: our kernel's same-plan spread with the pacing as planned and off, on a build
#           with w-lead-override.patch applied (the corpus four times, ~350 s: an H200's).
#   PART=20: backend=cublas through legacy cuBLAS (TGV_CUBLAS_API=legacy, torch's call)
#           against cuBLASLt in one run: cublas_vs_torch.py on the points that ran under
#           0.98x torch most often, then the corpus back to back with each (~250 s).
set -u
c=build-gpu/carry; o=${OUT:-/tmp}/r; mkdir -p $o
export PYTHONUNBUFFERED=1
untuned=/nonexistent/tgv-untuned.json
# The Python benches untuned, on this build's library.
py=(env TGV_TUNING_FILE=$untuned TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python)
nvidia-smi --query-gpu=name,uuid,vbios_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $o/gpu.txt; cat $o/gpu.txt
# Clocks, power and throttle reasons every 200 ms for the whole call: a small grid's rate
# follows the SM clock, a full grid's the memory (perf-notes §48's harness question).
# Once per call: a PART that runs another (bash $0) keeps the first logger.
if [ -z "${TGV_ROUND_CLOCKS:-}" ]; then
  export TGV_ROUND_CLOCKS=1
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 200 > $o/clocks.csv 2>/dev/null &
  clock_log=$!
  trap 'kill $clock_log 2>/dev/null' EXIT
fi
# The GPU suite and the example (gpu-check.sh), pytest and the sanitizers unless PYTEST=0 / SANITIZE=0.
check() {
  TESTS=1 BENCH=0 HOST_TESTS=0 PYTEST=${PYTEST:-1} SANITIZE=${SANITIZE:-1} OUT=$o/check timeout ${CHECK_S:-400} \
    bash $c/gpu-check.sh > $o/check.txt 2>&1
  echo "check rc=$?"; grep -E "^=== .*(FAILED|skipped)|tests ran|PASSED|FAILED|SUMMARY|passed|all steps" $o/check.txt | head -30
  grep -hE "^\[==========\] .* ran|^\[  PASSED  \]" $o/check/gpu-tests.log 2>/dev/null | head -2
  # gpu-check.sh's logs as one file: the device tool returns only a few files per call.
  tar czf $o/check-logs.tgz -C $o check && rm -rf $o/check
}
# The Hugging Face decode step, untuned, on this build's library.
e2e() {
  "${py[@]}" timeout ${E2E_S:-$1} python3 bench/python/e2e_decode.py --quick --no-tune --batches 1 4 16 --csv $o/e2e.csv > $o/e2e.txt 2>&1
  echo "e2e rc=$?"; grep -E "^\| (8b|70b)|check" $o/e2e.txt | head -20
}
# The decoder-layer chain untuned, twice, the first with every stage's plan logged.
chain() {
  for r in 1 2; do
    echo "### chain round $r"
    TGV_TUNING_FILE=$untuned TGV_LOG_DISPATCH=$((r == 1)) timeout 60 $c/bin/tgv-bench --mode chain --m 1,4,16 \
      > $o/chain-$r.txt 2>&1
    grep -E "^llama|FAIL" $o/chain-$r.txt
  done
}
# The chain untuned, A (var.tgz's A/) and B (this build) alternated ROUNDS times.
chain_ab() {
  for r in $(seq ${ROUNDS:-2}); do
    for L in A B; do
      b=$c/bin/tgv-bench; [ $L = A ] && b=/tmp/var/A/tgv-bench
      echo "### chain $L round $r"
      TGV_TUNING_FILE=$untuned timeout 60 $b --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL"
    done
  done | tee $o/chain-ab.txt
}
# A gtest run's exit status, counts and first failures: name, log, then the command.
gtests() {
  local name=$1 log=$2; shift 2
  "$@" > $log 2>&1
  echo "$name rc=$?: $(grep -E 'ERROR SUMMARY|^\[==========\] .* ran|^\[  (PASSED|FAILED)  \]' $log | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] .*\(' $log | head -5
}
# The chain untuned under several settings of one build, alternated: output file,
# rounds, then each setting as NAME:ENV (ENV: VAR=value words, or empty).
chain_modes() {
  local f=$1 rounds=$2; shift 2
  for r in $(seq $rounds); do
    for md in "$@"; do
      echo "### chain ${md%%:*} round $r"
      env ${md#*:} TGV_TUNING_FILE=$untuned timeout 60 $c/bin/tgv-bench --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL"
    done
  done | tee $f
}
# The decode step untuned, A and B ("name:VAR=value ...") alternated E2E_ROUNDS times
# (default 2), every run's output appended to e2e-ab.txt and its table rows printed. Two
# processes of one build have differed by 0.7% at a batch (perf-notes §55): a difference
# under ~1% wants more rounds.
e2e_ab() {
  local mds=()
  for r in $(seq ${E2E_ROUNDS:-2}); do mds+=("$1" "$2"); done
  for md in "${mds[@]}"; do
    echo "## e2e ${md%%:*} from $SECONDS s" >> $o/e2e-ab.txt
    "${py[@]}" ${md#*:} timeout 120 python3 bench/python/e2e_decode.py --quick --no-tune --batches 1 4 16 > /tmp/e2e.txt 2>&1
    echo "## e2e ${md%%:*} rc=$? (model batch torch-ms tgv-fused-ms x)"
    cat /tmp/e2e.txt >> $o/e2e-ab.txt
    grep -hE "^\| (8b|70b)" /tmp/e2e.txt | awk -F'|' '{print $2,$4,$5,$10,$11}'
  done
}
# One experiment variable of this build against main (PART=28, 30): the GPU tests
# matching a filter with it on, the chain alternated ROUNDS (default 2) times, the
# corpus back to back and between kernels (MODES) each way; name, VAR=value, filter.
variable_ab() {
  local name=$1 e=$2 filter=$3
  env $e timeout 150 $c/bin/tgv_gpu_tests --gtest_filter="$filter" > $o/$name-tests.txt 2>&1
  echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $o/$name-tests.txt | tr '\n' ' ')"
  chain_modes $o/$name-chain.txt ${ROUNDS:-2} "main:" "$name:$e"
  for mode in ${MODES:-b2b iso}; do
    flag=; [ $mode = iso ] && flag=--isolated
    corpus $mode-main ${CORPUS_S:-110} "" $flag
    corpus $mode-$name ${CORPUS_S:-110} "$e" $flag
  done
  gzip -f $o/*.csv
}
# PART=12, 15, 18, 19: one split_stress run of $ss seconds under its own timeout
# (a fault ends the process, a hang is killed): name, env, then its arguments.
stress() {
  local name=$1 e=$2; shift 2
  "${py[@]}" env $e timeout $((ss + 35)) python3 bench/experiments/split_stress.py --seconds $ss "$@" \
    > $o/stress-$name.txt 2>&1
  echo "$name rc=$?: $(grep -v CUDAEvent $o/stress-$name.txt | grep -E '^[0-9]+x' | tail -1)"
}
# The untuned corpus back to back (bench/python/corpus_bench.py, torch beside
# it) under its own timeout: name (files $o/corpus-NAME.csv and .log), seconds,
# env (VAR=value words, or ""), then corpus_bench.py's own arguments.
corpus() {
  local name=$1 s=$2 e=$3; shift 3
  "${py[@]}" $e timeout $s python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench "$@" \
    --csv $o/corpus-$name.csv > $o/corpus-$name.log 2>&1
  echo "corpus $name rc=$?"; grep -E "^\| (auto|cublas|tgv) |floor|rror" $o/corpus-$name.log | head -8
}
# PART=14 and 16: a split_stress run in the background; one still running past
# its time (STRESS_S + 25 s) is hung, and cuda-gdb attaches to it and lists the
# resident kernels, blocks and warps (PC, SASS); a fault leaves a lightweight
# core dump that cuda-gdb reads the same way (the exception names the PC).
g=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -1)
gdb_read() {  # output file, then cuda-gdb's target arguments
  local f=$1; shift
  timeout 120 $g -batch "$@" -ex "info cuda kernels" -ex "info cuda blocks" -ex "info cuda sms" \
    -ex "info cuda warps" -ex "x/6i \$pc" -ex "cuda block (1,0,0) thread (0,0,0)" -ex "info cuda warps" \
    -ex "x/6i \$pc" -ex "cuda block (0,0,0) thread (128,0,0)" -ex "x/6i \$pc" > $f 2>&1
  echo "cuda-gdb rc=$? $(wc -l < $f) lines"
}
watch() {  # name, env, split_stress.py arguments
  local name=$1 e=$2; shift 2
  "${py[@]}" env $e CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_ENABLE_LIGHTWEIGHT_COREDUMP=1 \
    CUDA_COREDUMP_FILE=$o/core-$name.%p python3 bench/experiments/split_stress.py --seconds $ss "$@" \
    > $o/stress-$name.txt 2>&1 &
  local pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt $((ss + 25)) ]; do sleep 1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then
    echo "$name: running after $t s: attaching"
    gdb_read $o/gdb-$name.txt -p $pid
    kill -9 $pid; wait $pid 2>/dev/null
  else
    wait $pid; echo "$name rc=$?: $(grep -v CUDAEvent $o/stress-$name.txt | grep -E '^[0-9]+x' | tail -1)"
    sleep 2
    for f in $o/core-$name.*; do [ -f "$f" ] && ls -la $f && gdb_read $o/gdb-$name.txt -ex "target cudacore $f"; rm -f $f; done
  fi
  [ -f $o/gdb-$name.txt ] && grep -E "Exception|exception|^\*|^ +[0-9]+ +0x|=> " $o/gdb-$name.txt | head -${SHOW:-40}
}
if [ "${PART:-1}" = 1 ]; then
  check
  chain
elif [ "${PART:-1}" = 3 ]; then
  mkdir -p /tmp/var; tar xzf $c/var.tgz -C /tmp/var
  [ "${CHECK:-1}" = 1 ] && check
  chain_ab
  [ "${E2E:-1}" = 1 ] && e2e 150
elif [ "${PART:-1}" = 4 ]; then
  [ "${CHAIN:-1}" = 1 ] && chain  # as before the failing run
  shapes="3072x4096 6144x2048 3584x3584 2560x5120 5120x2560 2048x7168 3584x4096 4096x3584 7168x2048 5120x2880 2112x7168 3840x4096"
  for r in $(seq ${RUNS:-6}); do
    pull=$(( (r + 1) % 2 ))
    "${py[@]}" TGV_SPLIT_K_PULL=$pull timeout 100 python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench \
      --shapes $shapes --csv $o/chase-$r.csv > $o/chase-$r.log 2>&1
    echo "run $r pull=$pull rc=$? $(grep -cE 'launch failure|illegal|Error' $o/chase-$r.log) errors; $(grep '^\[' $o/chase-$r.log | tail -1)"
  done
  "${py[@]}" timeout ${MEMCHECK_S:-200} compute-sanitizer --tool memcheck --error-exitcode 1 python3 \
    bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench --shapes 3840x4096 --m ${MEMCHECK_M:-1 8 32 64} --replays 1 \
    --csv $o/memcheck.csv > $o/memcheck.log 2>&1
  echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|Invalid|Error" $o/memcheck.log | head -5
elif [ "${PART:-1}" = 5 ]; then
  # Every candidate back to back (the cost model's refit, perf-notes §35): weights
  # >= 4 MB at SWEEP_M, splits SPLITS, the deepest ring; rows written as measured.
  "${py[@]}" timeout ${SWEEP_S:-540} python3 bench/experiments/isolated.py --corpus bench/corpus/decode.shapes \
    --min-mb ${MIN_MB:-4} --stages 0 --splits ${SPLITS:-1,2,3,4,5,6,8} --m ${SWEEP_M:-1,4,16,32} --replays 3 --chain-only \
    --csv $o/sweep.csv > $o/sweep.log 2>&1
  echo "sweep rc=$? $(grep -c . $o/sweep.csv) rows"; tail -2 $o/sweep.log
  gzip -f $o/sweep.csv
elif [ "${PART:-1}" = 6 ]; then
  # A dispatcher change B against A (staged as for PART=3): the chain A B A B,
  # then the corpus back to back on B and on A, each with torch beside it.
  mkdir -p /tmp/var; tar xzf $c/var.tgz -C /tmp/var
  chain_ab
  for L in B A; do
    lib=$c/bin/libtgv_gemm.so; [ $L = A ] && lib=/tmp/var/A/libtgv_gemm.so
    corpus b2b-$L ${CORPUS_S:-200} TGV_GEMM_LIBRARY=$lib
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 7 ]; then
  timeout ${PLANS_S:-500} python3 bench/experiments/chain_plans.py --model ${MODEL:-llama3.1-8b} --rounds ${ROUNDS:-1} \
    --out /tmp/chain-plans > $o/chain-plans.txt 2>&1  # its tuning files are scratch (the tool returns 8 files)
  echo "chain_plans rc=$?"; grep -v "^#   " $o/chain-plans.txt
elif [ "${PART:-1}" = 8 ]; then
  rot=${ROT:-7}
  TGV_EXP_K_ROTATE=$rot timeout ${TESTS_S:-240} $c/bin/tgv_gpu_tests --gtest_filter='*Tgv*:*Epilogue*' \
    > $o/rot-tests.txt 2>&1
  echo "tests (rotate $rot) rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran" $o/rot-tests.txt | head -5
  for r in 1 2; do for R in 0 $rot; do
    echo "### chain rotate=$R round $r"
    TGV_EXP_K_ROTATE=$R TGV_TUNING_FILE=$untuned timeout 60 $c/bin/tgv-bench --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL"
  done; done | tee $o/rot-chain.txt
  big="28672x4096 4096x14336 6144x4096 4096x4096 7168x8192 8192x3584 1280x8192 8192x1024 37888x3584 27648x5120 18944x3584 14336x4096"
  for R in 0 $rot 0 $rot; do
    "${py[@]}" TGV_EXP_K_ROTATE=$R timeout 100 python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench \
      --shapes $big --m 1 16 --csv $o/rot-corpus-$R.csv > $o/rot-corpus-$R.log 2>&1
    echo "corpus rotate=$R rc=$?"; grep -E "^\| (tgv) |floor" $o/rot-corpus-$R.log | head -3
    [ -f $o/rot-corpus-$R.csv ] && mv $o/rot-corpus-$R.csv $o/rot-corpus-$R-$(date +%s).csv
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 10 ]; then
  filter=$(for t in 24 25 26 27 28 29; do printf '*TgvTactic*/%s:*_t%s_*:' $t $t; done)
  timeout ${TESTS_S:-200} $c/bin/tgv_gpu_tests --gtest_filter="$filter" > $o/k256-tests.txt 2>&1
  echo "tests (tactics 24-29) rc=$?"; grep -E "^\[  (PASSED|FAILED) |tests ran" $o/k256-tests.txt | head -8
  "${py[@]}" timeout ${SWEEP_S:-300} python3 bench/experiments/isolated.py --m 1,16 --splits 1,2 --replays 3 \
    --csv $o/k256.csv > $o/k256.log 2>&1
  echo "k256 rc=$? $(grep -c . $o/k256.csv) rows"; grep "^[0-9]" $o/k256.log
  gzip -f $o/k256.csv
elif [ "${PART:-1}" = 11 ]; then
  ss=${STRESS_S:-20}
  stress() {  # name, env, split_stress.py arguments
    local name=$1 e=$2; shift 2
    "${py[@]}" env $e timeout $((ss + 45)) python3 bench/experiments/split_stress.py --seconds $ss "$@" \
      > $o/stress-$name.txt 2>&1
    echo "$name rc=$?: $(grep -v CUDAEvent $o/stress-$name.txt | grep -E '^[0-9]+x|^  ' | tail -3 | tr '\n' ' ')"
  }
  stress own "TGV_SPLIT_K_PULL=0" --points 2048x4096x32 3840x4096x64
  stress push-nopdl "TGV_SPLIT_K_PULL=0" --points 2048x4096x32 --split 2 --pdl 0
  stress pull-nopdl "TGV_SPLIT_K_PULL=1" --points 2048x4096x32 --split 2 --pdl 0
  stress push-64x64 "TGV_SPLIT_K_PULL=0" --points 3840x4096x64 --split 2 --tactic 15
  stress stream-k "TGV_SPLIT_K_PULL=0" --points 2048x4096x32 --split -1  # no clusters: a way back for small N?
  # The faulting case last, with a lightweight core dump: the exception names the instruction.
  stress push-pdl "TGV_SPLIT_K_PULL=0 CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_ENABLE_LIGHTWEIGHT_COREDUMP=1
    CUDA_COREDUMP_FILE=$o/core.%p" --points 2048x4096x32 --split 2
  ls -la $o/core.* 2>/dev/null | head -3
elif [ "${PART:-1}" = 12 ]; then
  # PART=11's failing runs (split 2, PDL on, pushed and pulled) on each variant
  # library first, then PART=11's controls on this build. Stage the variants as
  # build-gpu/carry/var/<name>/libtgv_gemm.so (VARIANTS, default "B C": the
  # cluster-leave and the late-trigger patches); only bin/libtgv_gemm.so and
  # python/ of the carry are needed.
  ss=${STRESS_S:-20}
  for v in ${VARIANTS:-B C}; do
    lib=TGV_GEMM_LIBRARY=$c/var/$v/libtgv_gemm.so
    stress $v-push-pdl "$lib TGV_SPLIT_K_PULL=0" --points 2048x4096x32 --split 2
    stress $v-pull-pdl "$lib TGV_SPLIT_K_PULL=1" --points 2048x4096x32 --split 2
  done
  stress push-nopdl "TGV_SPLIT_K_PULL=0" --points 2048x4096x32 --split 2 --pdl 0
  stress pull-nopdl "TGV_SPLIT_K_PULL=1" --points 2048x4096x32 --split 2 --pdl 0
  stress stream-k "TGV_SPLIT_K_PULL=0" --points 2048x4096x32 --split -1
  stress push-pdl "TGV_SPLIT_K_PULL=0" --points 2048x4096x32 --split 2
elif [ "${PART:-1}" = 13 ]; then
  # Which kernel faults (perf-notes §39): the library's own split-1 plans alone
  # under the stress, a forced split 1, then stream-K and split 2 replayed with
  # no other graph, and stream-K under a lightweight core dump read by cuda-gdb.
  ss=${STRESS_S:-20}
  stress() {  # name, env, timeout, split_stress.py arguments
    local name=$1 e=$2 t=$3; shift 3
    "${py[@]}" env $e timeout $t python3 bench/experiments/split_stress.py --seconds $ss "$@" \
      > $o/stress-$name.txt 2>&1
    echo "$name rc=$?: $(grep -v CUDAEvent $o/stress-$name.txt | grep -E '^[0-9]+x' | tail -1)"
  }
  p=2048x4096x32
  stress own "" $((ss + 35)) --points $p
  stress split1 "" $((ss + 35)) --points $p --split 1
  stress sk-alone "" $((ss + 35)) --points $p --split -1 --graphs split
  stress push-alone "TGV_SPLIT_K_PULL=0" $((ss + 35)) --points $p --split 2 --graphs split
  stress pull-alone "TGV_SPLIT_K_PULL=1" $((ss + 35)) --points $p --split 2 --graphs split
  stress sk-core "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_ENABLE_LIGHTWEIGHT_COREDUMP=1 CUDA_COREDUMP_FILE=$o/core.%p" \
    ${CORE_S:-150} --points $p --split -1
  ls -la $o/core.* 2>/dev/null | head -3
  g=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -1)
  for f in $o/core.*; do
    [ -f "$f" ] && [ -n "$g" ] && timeout 60 $g -batch -ex "target cudacore $f" -ex "info cuda kernels" \
      -ex "bt" -ex "x/4i \$pc" > $o/core-read.txt 2>&1 && head -40 $o/core-read.txt
  done
elif [ "${PART:-1}" = 14 ]; then
  # Where the split-K stress stops (perf-notes §39), split 2 pushed.
  ss=${STRESS_S:-20}
  p=2048x4096x32
  watch push-alone "TGV_SPLIT_K_PULL=0" --points $p --split 2 --graphs split
  watch push-nopdl "TGV_SPLIT_K_PULL=0" --points $p --split 2 --pdl 0
  watch push-alone-nopdl "TGV_SPLIT_K_PULL=0" --points $p --split 2 --pdl 0 --graphs split
elif [ "${PART:-1}" = 15 ]; then
  # The faulting push alone (perf-notes §39) held at the fault
  # (CUDA_DEVICE_WAITS_ON_EXCEPTION) for cuda-gdb to read the faulting CTA's
  # barriers (full, empty, pace, split_bar after a ring of 8 or 9 stages of
  # 24 KB), then the same stress on the 64x64 tile (no K groups) and on the
  # variant libraries of build-gpu/carry/var (VARIANTS, default "B C").
  ss=${STRESS_S:-10}
  g=$(command -v cuda-gdb)
  p=2048x4096x32
  "${py[@]}" env TGV_SPLIT_K_PULL=0 CUDA_DEVICE_WAITS_ON_EXCEPTION=1 python3 bench/experiments/split_stress.py \
    --seconds $ss --points $p --split 2 --graphs split > $o/stress-held.txt 2>&1 &
  pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt $((ss + 25)) ]; do sleep 1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then
    echo "held: running after $t s: attaching"
    timeout 150 $g -batch -p $pid -ex "info cuda kernels" -ex "info cuda blocks" -ex "info cuda sms" \
      -ex "info cuda warps" -ex "x/3i \$pc" -ex "info cuda lanes" \
      -ex "x/40gx (@shared unsigned long long *)0x36000" -ex "x/40gx (@shared unsigned long long *)0x30000" \
      -ex "x/8wx (@shared unsigned int *)0x36400" > $o/gdb-held.txt 2>&1
    echo "cuda-gdb rc=$? $(wc -l < $o/gdb-held.txt) lines"; grep -iE "exception|=> " $o/gdb-held.txt | head -5
    kill -9 $pid; wait $pid 2>/dev/null
  else
    wait $pid; echo "held rc=$?: $(grep -E '^[0-9]+x' $o/stress-held.txt | tail -1)"
  fi
  stress t15-push-alone "TGV_SPLIT_K_PULL=0" --points $p --split 2 --tactic 15 --graphs split
  for v in ${VARIANTS:-B C}; do
    stress $v-push-alone "TGV_GEMM_LIBRARY=$c/var/$v/libtgv_gemm.so TGV_SPLIT_K_PULL=0" --points $p --split 2 --graphs split
  done
  stress push-alone-again "TGV_SPLIT_K_PULL=0" --points $p --split 2 --graphs split
elif [ "${PART:-1}" = 16 ]; then
  # Which kernel faults when every graph is replayed (perf-notes §39): stream-K,
  # the pulled split 2 with PDL, the pushed one on the cluster-leave library
  # (var/B), the pushed one without PDL; each up to STRESS_S (default 25) s.
  ss=${STRESS_S:-25}
  p=2048x4096x32
  watch sk-all "TGV_SPLIT_K_PULL=0" --points $p --split -1
  watch pull-all "TGV_SPLIT_K_PULL=1" --points $p --split 2
  watch B-push-all "TGV_GEMM_LIBRARY=$c/var/B/libtgv_gemm.so TGV_SPLIT_K_PULL=0" --points $p --split 2
  watch push-nopdl-all "TGV_SPLIT_K_PULL=0" --points $p --split 2 --pdl 0
elif [ "${PART:-1}" = 17 ]; then
  # The faulting CTA's barriers (perf-notes §39): each run held at its fault
  # (CUDA_DEVICE_WAITS_ON_EXCEPTION); once its heartbeat stops for 8 s cuda-gdb
  # attaches and dumps, in the faulting CTA, the end of ring stage 8 and the
  # barriers after it (full[16], empty[16], sk_last, pace, split_bar: tactic 2's
  # ring of 9 stages of 24 KB, dynamic shared memory from 0x400).
  ss=${STRESS_S:-25}
  held() {  # name, env, split_stress.py arguments
    local name=$1 e=$2; shift 2
    "${py[@]}" env $e CUDA_DEVICE_WAITS_ON_EXCEPTION=1 python3 bench/experiments/split_stress.py --seconds $ss "$@" \
      > $o/stress-$name.txt 2>&1 &
    local pid=$! t=0 still=0 size=0
    while kill -0 $pid 2>/dev/null && [ $t -lt $((ss + 25)) ] && [ $still -lt 8 ]; do
      sleep 1; t=$((t + 1)); n=$(stat -c %s $o/stress-$name.txt)
      if [ $t -gt 12 ] && [ $n = $size ]; then still=$((still + 1)); else still=0; fi; size=$n
    done
    if kill -0 $pid 2>/dev/null; then
      echo "$name: stalled at $t s: attaching"
      timeout 150 $g -batch -p $pid -ex "info cuda kernels" -ex "info cuda blocks" -ex "info cuda warps" \
        -ex "x/3i \$pc" -ex "x/8gx (@shared unsigned long long *)0x363c0" \
        -ex "x/36gx (@shared unsigned long long *)0x36400" -ex "x/4gx (@shared unsigned long long *)0x400" \
        > $o/gdb-$name.txt 2>&1
      echo "cuda-gdb rc=$?"; grep -vE "^\[|^$|^Using|^  +[0-9]+ active" $o/gdb-$name.txt | cut -c1-160 | head -${SHOW:-70}
      kill -9 $pid; wait $pid 2>/dev/null
    else
      wait $pid; echo "$name rc=$?: $(grep -E '^[0-9]+x' $o/stress-$name.txt | tail -1)"
    fi
  }
  p=2048x4096x32
  held sk-all "TGV_SPLIT_K_PULL=0" --points $p --split -1
  held push-nopdl-all "TGV_SPLIT_K_PULL=0" --points $p --split 2 --pdl 0
elif [ "${PART:-1}" = 18 ]; then
  # Is the W producer's pacing (Params::w_lead) the trigger (perf-notes §39)? On
  # a build whose launcher takes TGV_EXP_W_LEAD / TGV_EXP_K_GROUPS overrides:
  # stream-K among every graph with pacing off, the library's own split-1 plans
  # with pacing forced on (lead 2), the stream-K control, the pushed split 2
  # alone with pacing off.
  ss=${STRESS_S:-25}
  p=2048x4096x32
  stress sk-all-lead0 "TGV_EXP_W_LEAD=0" --points $p --split -1
  stress own-lead2 "TGV_EXP_W_LEAD=2" --points $p
  stress sk-all "TGV_SPLIT_K_PULL=0" --points $p --split -1
  stress push-alone-lead0 "TGV_EXP_W_LEAD=0" --points $p --split 2 --graphs split
elif [ "${PART:-1}" = 19 ]; then
  # The fix of perf-notes §39 (K groups on even rings; §40: no leave barrier)
  # under the stresses that failed: the pushed split 2
  # alone with PDL, stream-K / pushed / pulled among every graph, the pulled
  # alone, the library's own plans; then the GPU tests of split-K, stream-K,
  # K groups and pacing.
  ss=${STRESS_S:-20}
  p=2048x4096x32
  # The library's own plans on every narrow K-group tile (64x8, 64x16, 64x32: odd
  # deepest rings before §39), split-K among them, every graph replayed.
  stress own-tiles "" --points 2048x4096x1 2048x4096x8 2048x4096x16 2048x4096x32 1024x8192x4
  stress push-alone "TGV_SPLIT_K_PULL=0" --points $p --split 2 --graphs split
  stress sk-all "TGV_SPLIT_K_PULL=0" --points $p --split -1
  stress push-all "TGV_SPLIT_K_PULL=0" --points $p --split 2
  stress pull-all "TGV_SPLIT_K_PULL=1" --points $p --split 2
  if [ "${MORE:-1}" = 1 ]; then
    stress pull-alone "TGV_SPLIT_K_PULL=1" --points $p --split 2 --graphs split
    stress push-3840 "TGV_SPLIT_K_PULL=0" --points 3840x4096x64 --split 2 --tactic 15
  fi
  timeout ${TESTS_S:-200} $c/bin/tgv_gpu_tests \
    --gtest_filter="${TEST_FILTER:-*TgvSplitK*:*TgvStreamK*:*TgvKGroup*:*TgvPaced*:*EpilogueStreamK*}" > $o/split-tests.txt 2>&1
  echo "split tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $o/split-tests.txt | tr '\n' ' ')"
  if [ "${CORPUS:-0}" = 1 ]; then  # the untuned corpus back to back, split-K plans and all
    corpus b2b ${CORPUS_S:-200} ""
    gzip -f $o/corpus-b2b.csv
  fi
elif [ "${PART:-1}" = 20 ]; then
  # Our cuBLAS path through legacy cuBLAS (cublasGemmEx, torch's own call) against
  # cuBLASLt (the default), same run (perf-notes §42's closing note): the points
  # where backend=cublas ran under 0.98x torch in 3+ of the sixth session's eight
  # H100 corpus runs, each API twice, alternated; then the corpus back to back
  # with TGV_CUBLAS_API=legacy and with lt.
  for api in lt legacy lt legacy; do
    echo "### TGV_CUBLAS_API=$api"
    "${py[@]}" TGV_CUBLAS_API=$api timeout 40 python3 bench/experiments/cublas_vs_torch.py --replays 5 --m 2 8 64 \
      --shapes 128x16384 21504x5376 128256x4096 128000x4608 7168x2048 5760x2880 360x2880 512x2880 2>&1 | grep -v "^#"
  done > $o/cublas-api.txt 2>&1
  # Each run's points under 0.98x and its summary (per M and all): what it found.
  grep -E "^###|below 0.98|< 0.98|^ +(all|[0-9]+) +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+$" $o/cublas-api.txt | head -32
  for api in legacy lt; do
    corpus b2b-$api ${CORPUS_S:-170} TGV_CUBLAS_API=$api
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 21 ]; then
  # Our kernel's run-to-run spread with the W producer's pacing as planned and off
  # (perf-notes §39: on the H200 two graphs of one plan disagreed by 0.93-1.06, the
  # paced plans more often). On a build with w-lead-override.patch applied: the
  # corpus back to back as planned, then with TGV_EXP_W_LEAD=0, each run's spread
  # by scripts/same_plan_spread.py, twice.
  for r in 1 2; do
    for lead in planned 0; do
      e=; [ $lead = 0 ] && e=TGV_EXP_W_LEAD=0
      corpus lead-$lead-$r ${CORPUS_S:-120} "$e"
      python3 scripts/same_plan_spread.py $o/corpus-lead-$lead-$r.csv | tail -2
    done
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 22 ]; then
  # The persistent whole-tile schedule (perf-notes §44) on a build with
  # persistent-schedule.patch applied, meant for an H200 or a faster-class H100
  # (the corpus summary's floor ~3070 GB/s): the stream-K GPU tests run persistent
  # (TGV_EXP_PERSIST=2, their results checked as ever); the large layer weights,
  # split 1 against stream-K run persistent (one CTA per SM, whole tiles), back to
  # back; the chain with auto's split-1 plans of > SMs tiles persistent and as
  # planned, alternated; row segments and the stream floor beside.
  TGV_EXP_PERSIST=2 timeout 120 $c/bin/tgv_gpu_tests --gtest_filter='*TgvStreamK*:*EpilogueStreamK*' \
    > $o/persist-tests.txt 2>&1
  echo "persistent stream-K tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $o/persist-tests.txt | tr '\n' ' ')"
  "${py[@]}" TGV_EXP_PERSIST=2 timeout 200 python3 bench/experiments/isolated.py --m 1,16 --splits 1,-1 --stages 0 \
    --replays 5 --chain-only --all --csv $o/persist-sweep.csv > $o/persist-sweep.log 2>&1
  echo "sweep rc=$?"; grep -E "^[0-9]+ [0-9]+ [0-9]+ \|" $o/persist-sweep.log | head -24
  for r in 1 2; do
    for e in off on; do
      env=; [ $e = on ] && env="TGV_EXP_PERSIST=2 TGV_EXP_PERSIST_AUTO=1"
      echo "### chain persistent $e round $r"
      env $env TGV_TUNING_FILE=$untuned timeout 60 $c/bin/tgv-bench --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL"
    done
  done | tee $o/persist-chain.txt
  for shape in "28672 4096" "8448 4096"; do
    timeout 60 $c/bin/row-segments $shape
  done 2>&1 | tee $o/row-segments.txt
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 23 ]; then
  # Pacing only the first wave (perf-notes §44), on a build with
  # pace-first-wave.patch applied: the paced GPU tests in each mode, then the chain
  # and six layer weights (back to back and between spacer kernels, split 1
  # and 2) with pacing as planned, off, and on the first wave only, alternated.
  modes=("planned:" "off:TGV_EXP_W_LEAD=0" "first:TGV_EXP_PACE_FIRST_WAVE=1")
  for md in "${modes[@]}"; do
    env ${md#*:} timeout 100 $c/bin/tgv_gpu_tests --gtest_filter='*TgvPaced*:*TgvTactic*/0:*Pdl*' \
      > $o/pace-tests-${md%%:*}.txt 2>&1
    echo "tests ${md%%:*} rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $o/pace-tests-${md%%:*}.txt | tr '\n' ' ')"
  done
  chain_modes $o/pace-chain.txt 2 "${modes[@]}"
  for md in "${modes[@]}"; do
    "${py[@]}" ${md#*:} timeout ${ISO_S:-90} python3 bench/experiments/isolated.py --m 1,16 --splits 1,2 --stages 0 \
      --shapes 28672:4096,14336:4096,4096:14336,8192:3584,7168:8192,6144:4096 --replays 5 --csv $o/pace-iso-${md%%:*}.csv > $o/pace-iso-${md%%:*}.log 2>&1
    echo "isolated ${md%%:*} rc=$?"; grep -E "^[0-9]+ [0-9]+ [0-9]+ \|" $o/pace-iso-${md%%:*}.log | head -22
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 24 ]; then
  # Pacing on the first wave only (main, perf-notes §45) against every CTA paced
  # (TGV_EXP_PACE_ALL=1, pace-all.patch), one build: the whole check first unless
  # CHECK=0, the chain alternated twice, the corpus back to back each way, then
  # between kernels each way unless ISO=0. Everything ends in one file, r24.tgz.
  [ "${CHECK:-1}" = 1 ] && check
  chain_modes $o/pace24-chain.txt 2 "first:" "all:TGV_EXP_PACE_ALL=1"
  modes=b2b; [ "${ISO:-1}" = 1 ] && modes="b2b iso"
  for mode in $modes; do
    flag=; [ $mode = iso ] && flag=--isolated
    corpus $mode-first ${CORPUS_S:-110} "" $flag
    corpus $mode-all ${CORPUS_S:-110} "TGV_EXP_PACE_ALL=1" $flag
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 25 ]; then
  # Where the 8B layer's cost of first-wave pacing sits (perf-notes §45): the chain
  # with every CTA paced, first wave only (main), and every CTA paced on gated
  # launches only (the 8B gate_up is the layer's one multi-wave grid), alternated.
  chain_modes $o/pace25-chain.txt ${ROUNDS:-3} "first:" "all:TGV_EXP_PACE_ALL=1" "gated:TGV_EXP_PACE_ALL=gated"
elif [ "${PART:-1}" = 26 ]; then
  # A gated launch's later waves paced (main) or not (TGV_EXP_PACE_ALL=first), on
  # gated weights back to back and between kernels, split 1 and 2 (pace-all.patch,
  # perf-notes §45: in the 8B layer the gate_up ran 1% faster paced), then plain.
  for md in "main:" "first:TGV_EXP_PACE_ALL=first"; do
    for kind in gated plain; do
      flag=; [ $kind = gated ] && flag=--gated
      "${py[@]}" ${md#*:} timeout ${ISO_S:-80} python3 bench/experiments/isolated.py $flag --m 1,16 --splits 1,2 \
        --stages 0 --shapes 28672:4096,14336:4096,37888:3584,7168:8192 --replays 5 \
        --csv $o/pace26-$kind-${md%%:*}.csv > $o/pace26-$kind-${md%%:*}.log 2>&1
      echo "$kind ${md%%:*} rc=$?"; grep -E "^[0-9]+ [0-9]+ [0-9]+ \|" $o/pace26-$kind-${md%%:*}.log | head -8
    done
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 27 ]; then
  # backend=cublas against torch where it trails in every run (perf-notes §45): torch
  # as it comes, then with its bf16 split-K reductions off (ours never adds in bf16).
  for fl in "" --torch-fp32-reduction; do
    "${py[@]}" timeout 60 python3 bench/experiments/cublas_vs_torch.py --shapes 5760x2880 2880x2880 4096x2880 \
      --m 1 2 8 16 $fl 2>&1 | tee -a $o/cublas27.txt | grep -E "^#|^ *[0-9]+ +[0-9]+ +[0-9]+ "
  done
elif [ "${PART:-1}" = 28 ]; then
  # A grid-level "started alone" test (grid-alone.patch, perf-notes §45) against main,
  # one build: the paced, PDL and stream-K GPU tests with it on, the chain
  # alternated twice, the corpus back to back and between kernels each way.
  variable_ab alone TGV_EXP_GRID_ALONE=${WINDOW_NS:-1000} '*TgvPaced*:*Pdl*:*TgvStreamK*:*EpilogueEngineShapes*'
elif [ "${PART:-1}" = 30 ]; then
  # A plain launch unpaced behind our own captured kernel (pace-after-ours.patch, §46).
  variable_ab after-ours TGV_EXP_PACE_AFTER_OURS=1 '*Graph*:*TgvPaced*:*Pdl*:*TgvStreamK*:*EpilogueEngineShapes*'
elif [ "${PART:-1}" = 31 ]; then
  t0=$SECONDS
  bash bench/experiments/harness-probe.sh
  rm -f /tmp/tgv-e2e-tuning.json
  "${py[@]}" timeout ${E2E_S:-220} python3 bench/python/e2e_decode.py --tuning-file $o/e2e-tuning.json \
    --quick --batches 1 4 16 --csv $o/e2e.csv > $o/e2e.txt 2>&1
  echo "e2e rc=$?"; grep -E "^\| (8b|70b)|check|autotune" $o/e2e.txt | head -20
  if [ "${PIN:-0}" = 1 ]; then
    "${py[@]}" python3 bench/experiments/pin_tuning.py /tmp/pinned32.json 5120:2048:32:8:2 4608:2048:32:8:2
    corpus b2b-main ${CORPUS_S:-90} ""
    corpus b2b-pinned ${CORPUS_S:-90} TGV_TUNING_FILE=/tmp/pinned32.json
    for f in $o/corpus-b2b-*.csv; do echo "$f"; grep -E "^[^,]*,(5120|4608),2048,32," $f | cut -d, -f2-4,9-13; done
  fi
  SWEEP_S=$((${TOTAL_S:-560} - (SECONDS - t0))) SWEEP_M=${SWEEP_M:-16,32} PART=5 bash $0
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 33 ]; then
  # The corpus's interleaving (perf-notes §48): the harness shapes at M = 1, 8, 32 with
  # each timed replay right after another implementation's graph (as the corpus has
  # timed since 2026-12-03) and after an untimed replay of its own (--warm-replays 1),
  # alternated; then the whole corpus both ways, then the sweep (PART=5) at SWEEP_M
  # (default 16,32) for what is left of TOTAL_S (default 540).
  t0=$SECONDS
  for v in ${HP3:-plain warm plain warm}; do
    f=; [ $v = warm ] && f="--warm-replays 1"
    "${py[@]}" timeout 60 python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench --m 1 8 32 $f \
      --shapes 4096x512 2880x1024 4096x2560 1024x4608 5120x2048 4608x2048 14336x4096 --csv $o/hp3.csv > $o/hp3-$v.log 2>&1
    echo "## corpus $v rc=$? (n,k,m,plan,auto,tgv,torch)"; cut -d, -f2-4,9,10,12,13 $o/hp3.csv | tail -n +2 | tr '\n' ' '; echo
    mv $o/hp3.csv $o/hp3-$v-$SECONDS.csv
  done
  corpus b2b-warm ${CORPUS_S:-150} "" --warm-replays 1
  corpus b2b ${CORPUS_S:-150} ""
  left=$((${TOTAL_S:-540} - (SECONDS - t0)))
  [ $left -gt 60 ] && SWEEP_S=$left SWEEP_M=${SWEEP_M:-16,32} PART=5 bash $0
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 34 ]; then
  # Where a one-wave grid's CTAs run after its own graph and after another's (perf-notes
  # §48): tgv-trace (bench/experiments/trace.sh, built into the carry) on 64-CTA and
  # 40-CTA grids, foreign 0 / 1 alternated twice, each CTA's SM kept (TRACE_CSV).
  # hints 1: W evict-first as the library loads it; 0: every load evict-normal (does L2
  # full of another graph's evict-normal lines slow an evict-first stream?).
  for r in 1 2; do
    for h in 1 0; do
      for f in 0 1; do
        for shape in "4096 2560 37" "4096 512 75" "2560 8192 20"; do
          set -- $shape
          echo "### trace $1x$2 calls $3 hints $h foreign $f round $r"
          TRACE_CSV=$o/trace-$1x$2-h$h-f$f-r$r.csv timeout 30 $c/tgv-trace $1 $2 1 1 12 1 $3 $h 0 0 2 $f 2>&1 \
            | grep -E "graph replay|^median|^kernel [0-9]+:"
        done
      done
    done
  done | tee $o/trace.txt
  gzip -f $o/trace-*.csv
elif [ "${PART:-1}" = 35 ]; then
  # The data-parallel + stream-K hybrid (sk-hybrid.patch, perf-notes §48) on a build with
  # the patch applied: the stream-K GPU tests with it off, 1 and 2, then isolated.py back
  # to back on multi-wave weights at M = 1 and 16, split 1 and stream-K, 0 / 1 / 2 twice
  # (plain, then gated: the 8B gate_up as the chain runs it). 1: every whole wave but the
  # last whole, stream-K over the rest; 2: every whole wave whole.
  for v in 0 1 2; do
    TGV_EXP_SK_HYBRID=$v timeout 120 $c/bin/tgv_gpu_tests --gtest_filter='*StreamK*' > $o/sk-tests-$v.txt 2>&1
    echo "stream-K tests hybrid=$v rc=$?: $(grep -E '^\[  (PASSED|FAILED)  \]' $o/sk-tests-$v.txt | tr '\n' ' ')"
  done
  for r in 1 2; do
    for v in 0 1 2; do
      echo "## isolated.py hybrid=$v round $r"
      "${py[@]}" TGV_EXP_SK_HYBRID=$v timeout 80 python3 bench/experiments/isolated.py --m 1,16 --splits 1,-1 --chain-only \
        --shapes 28672:4096,27648:5120,28672:3584,35840:5120,18944:3584 --all --replays 5 2>&1 | tee $o/sk-iso-$v-$r.txt \
        | grep -E "^[0-9]+ [0-9]+ [0-9]+ \||/sk|/1 "
      "${py[@]}" TGV_EXP_SK_HYBRID=$v timeout 40 python3 bench/experiments/isolated.py --gated --m 1,16 --splits 1,-1 \
        --chain-only --shapes 28672:4096 --all --replays 5 2>&1 | tee $o/sk-iso-gated-$v-$r.txt \
        | grep -E "^[0-9]+ [0-9]+ [0-9]+ \||/sk|/1 "
    done
  done
elif [ "${PART:-1}" = 39 ]; then
  # perf-notes §51's next H200 call: PART=38 without isolated.py, then PART=7 (~330 s).
  # CHAIN_EXTRA: the W producer never paced; two K groups on every narrow 64-row tile (§52).
  CHAIN_EXTRA=${CHAIN_EXTRA-"nolead:TGV_EXP_W_LEAD=0 kg2:TGV_EXP_K_GROUPS=2"} ISO=${ISO:-0} PART=38 bash $0 > $o/part38.txt 2>&1
  echo "PART=38 rc=$?"
  PLANS_S=${PLANS_S:-150} PART=7 bash $0
  echo "### PART=38 summary"; tail -c 6000 $o/summary.txt
elif [ "${PART:-1}" = 40 ]; then
  # Issue 11's decode step untuned and tuned at batches 1, 4, 16 (its tuning file kept),
  # then the sweep (PART=5) at SWEEP_M (default 1,4,16,32) until TOTAL_S (default 560).
  t0=$SECONDS
  "${py[@]}" timeout ${E2E_S:-230} python3 bench/python/e2e_decode.py --tuning-file $o/e2e-tuning.json \
    --quick --batches 1 4 16 --csv $o/e2e.csv > $o/e2e.txt 2>&1
  echo "e2e rc=$?"; grep -E "^\| (8b|70b)|check|autotune" $o/e2e.txt | head -24
  left=$((${TOTAL_S:-560} - (SECONDS - t0)))
  [ $left -ge 30 ] && SWEEP_S=$left PART=5 bash $0
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 41 ]; then
  # Two K groups on every narrow 64-row tile (TGV_EXP_K_GROUPS=2, perf-notes §52): the
  # GPU tests that reach large grids with it on, then one group against two on large
  # weights back to back, split 1 (plain, then the gated gate_up), then PART=40's decode
  # step untuned and tuned (E2E_S, default 230 s; no sweep).
  gtests "K groups 2 tests" $o/kg2-tests.txt env TGV_EXP_K_GROUPS=2 timeout 150 $c/bin/tgv_gpu_tests \
    --gtest_filter='Grid/TgvGemm.*:*TgvTactic*:*TgvStages*:*TgvPaced*:*TgvSplitK.*:*EpilogueGrid*:*EpilogueEngineShapes*:*Repeat*:Graph.*:Pdl.*:*KGroup*'
  for r in 1 2; do
    for v in 1 2; do
      for g in "" --gated; do
        sh=28672:4096,14336:4096,12288:4096,7168:8192,10240:5120,16384:3072; [ -n "$g" ] && sh=28672:4096
        echo "## K groups $v round $r $g"
        "${py[@]}" TGV_EXP_K_GROUPS=$v timeout 50 python3 bench/experiments/isolated.py $g --m 1,16 --splits 1 \
          --chain-only --all --shapes $sh --replays 5 2>&1
      done
    done
  done > $o/kg-iso.txt
  # One line per weight, M and gate: the 64-row tile's back-to-back us per setting and round.
  python3 - $o/kg-iso.txt <<'PY'
import re, sys
rows, pending, col, gate = {}, None, "", ""
for line in open(sys.argv[1]):
    h = re.match(r"## K groups (\d) round (\d) ?(.*)", line)
    if h:
        col, gate = "kg%s/r%s" % h.group(1, 2), h.group(3) or "plain"
        continue
    c = re.match(r"\s+(64x\d+x128/1)\s+chain\s+([\d.]+)", line)
    if c:
        pending = (c.group(1), float(c.group(2)))
        continue
    sm = re.match(r"(\d+) (\d+) (\d+) \| torch ([\d.]+)", line)
    if sm and pending:
        k = (sm.group(1), sm.group(2), sm.group(3), gate, pending[0])
        rows.setdefault(k, {})[col] = pending[1]
        rows[k]["torch/" + col[-2:]] = float(sm.group(4))
        pending = None
cols = ["kg1/r1", "kg2/r1", "kg1/r2", "kg2/r2", "torch/r1"]
print("n k m gate tile | " + " ".join(cols) + " | kg2/kg1")
for k, v in rows.items():
    a = [v.get(c, float("nan")) for c in cols]
    ratio = (a[1] + a[3]) / (a[0] + a[2])
    print(" ".join(k) + " | " + " ".join("%.2f" % x for x in a) + " | %.3f" % ratio)
PY
  TOTAL_S=0 PART=40 bash $0
elif [ "${PART:-1}" = 42 ]; then
  # The layer under each experiment switch, ROUNDS (default 1) times (~60 s a round):
  # main's plans, the gated hybrid, the W producer never paced, two K groups everywhere.
  chain_modes $o/chain.txt ${ROUNDS:-1} "land:" "gsk:TGV_EXP_SK_GATED=1" "nolead:TGV_EXP_W_LEAD=0" \
    "kg2:TGV_EXP_K_GROUPS=2"
elif [ "${PART:-1}" = 43 ]; then
  # Pacing off as the default? (perf-notes §52): the decode step untuned, main and
  # TGV_EXP_W_LEAD=0 alternated twice, then the corpus at M 1, 4, 16 between kernels
  # and back to back each way, then the chain under both (~450 s; five files back).
  e2e_ab "land:" "nolead:TGV_EXP_W_LEAD=0"
  for mode in iso b2b; do
    flag=; s=60; [ $mode = iso ] && flag=--isolated s=90
    corpus $mode-land ${CORPUS_S:-$s} "" $flag --m 1 4 16
    corpus $mode-nolead ${CORPUS_S:-$s} TGV_EXP_W_LEAD=0 $flag --m 1 4 16
  done
  chain_modes $o/chain.txt ${ROUNDS:-2} "land:" "nolead:TGV_EXP_W_LEAD=0"
  gzip -f $o/*.csv
  tar czf $o/corpus.tgz -C $o $(cd $o && ls corpus-*) && rm -f $o/corpus-*
elif [ "${PART:-1}" = 44 ]; then
  # The harness's order in a round (perf-notes §52): the corpus back to back at M 1-32 as
  # run so far (5 rotated rounds of 4 implementations: each behind the same neighbour
  # every round, and one first twice) and with --balanced-rounds (8 rounds of a Williams
  # design: each in each place, and behind each other one, twice), then with 16 (~390 s).
  # The question is the points under 0.98x torch, `cublas` (torch's own call) above all.
  # Then 16 balanced rounds: the median's noise narrower by ~1.8x over 5 (ROUNDS, default 1).
  for r in $(seq ${ROUNDS:-1}); do
    corpus plain-$r ${CORPUS_S:-75} "" --m 1 4 16 32
    corpus balanced-$r ${CORPUS_S2:-110} "" --m 1 4 16 32 --balanced-rounds
    corpus balanced16-$r ${CORPUS_S3:-200} "" --m 1 4 16 32 --balanced-rounds --replays 16
  done
  gzip -f $o/*.csv
  tar czf $o/corpus.tgz -C $o $(cd $o && ls corpus-*) && rm -f $o/corpus-*
elif [ "${PART:-1}" = 45 ]; then
  # An eager call's host cost (perf-notes §52: validate + plan 4.2-4.9 -> 0.8-0.9 us on the
  # build machine's CPU): tgv-bench's default shapes, every backend, M 1 and 16 (~60 s).
  timeout 150 $c/bin/tgv-bench --backend tgv,auto,cublas --host-overhead --m 1,16 --csv $o/host.csv > $o/host.txt 2>&1
  echo "tgv-bench --host-overhead rc=$?"; grep -iE "host|^ *[0-9]+ +[0-9]+ " $o/host.txt | head -40
elif [ "${PART:-1}" = 46 ]; then
  for r in $(seq ${ROUNDS:-2}); do
    echo "## round $r"
    "${py[@]}" timeout 120 python3 bench/experiments/isolated.py --m 16,32 --splits 1,2,-1 --chain-only --all \
      --shapes ${SHAPES:-5120:2048,4608:2048,5376:2048,10240:2560,5120:2880,5120:3072,3840:15360} --replays 5 \
      --csv $o/losers-$r.csv 2>&1 | tee $o/losers-$r.txt | tail -n 25
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 47 ]; then
  chain_modes $o/chain.txt ${ROUNDS:-2} "land:" "nolead:TGV_EXP_W_LEAD=0" \
    "nl-fused:TGV_EXP_W_LEAD=0 TGV_EXP_W_LEAD_ON=fused" "nl-gated:TGV_EXP_W_LEAD=0 TGV_EXP_W_LEAD_ON=gated" \
    "nl-residual:TGV_EXP_W_LEAD=0 TGV_EXP_W_LEAD_ON=residual"
  e2e_ab "land:" "nl-fused:TGV_EXP_W_LEAD=0 TGV_EXP_W_LEAD_ON=fused"
elif [ "${PART:-1}" = 36 ]; then
  # The next session's first call after 2026-12-06's (perf-notes §48): PART=34 (tgv-trace
  # built into the carry by bench/experiments/trace.sh) then PART=33, ~560 s in all.
  PART=34 bash $0
  TOTAL_S=${TOTAL_S:-480} PART=33 bash $0
elif [ "${PART:-1}" = 38 ]; then
  t=/tmp/r38; mkdir -p $t
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  {
    if [ "${SUITE:-1}" = 1 ]; then gtests "GPU suite" $t/gpu-tests.txt timeout 200 $c/bin/tgv_gpu_tests
    else gtests "stream-K, batch, repeat tests" $t/gpu-tests.txt timeout 100 $c/bin/tgv_gpu_tests \
      --gtest_filter='*StreamK*:Tgv*Batch*:*Repeat*:*Bitwise*'; fi
    gtests "memcheck stream-K" $t/memcheck.txt timeout 100 $cs --tool memcheck --error-exitcode 9 \
      $c/bin/tgv_gpu_tests --gtest_filter='Grid/TgvStreamK.*:Sm90/EpilogueStreamK.*'
    gtests "hybrid=2 stream-K tests" $t/sk2.txt env TGV_EXP_SK_HYBRID=2 timeout 60 $c/bin/tgv_gpu_tests \
      --gtest_filter='*StreamK*:Tgv*Batch*'
  } 2>&1 | tee $o/summary.txt
  # The layer as planned, then with its gated gate_up as the hybrid (TGV_EXP_SK_GATED=1).
  chain_modes $o/chain.txt ${ROUNDS:-2} "land:" "gsk:TGV_EXP_SK_GATED=1" ${CHAIN_EXTRA:-}
  grep -E "^###|^llama" $o/chain.txt >> $o/summary.txt
  TGV_LOG_DISPATCH=1 TGV_TUNING_FILE=$untuned timeout 30 $c/bin/tgv-bench --mode chain --m 1 2>&1 \
    | grep -E 'n=28672' | head -2 | tee -a $o/summary.txt
  [ "${CORPUS:-1}" = 1 ] && corpus b2b ${CORPUS_S:-75} "" --m ${CORPUS_M:-1 4 16 32} | tee -a $o/summary.txt
  # The 8B gate_up and two other multi-wave weights, plain and gated, split 1 against
  # the hybrid (the chain's gated stage keeps split 1 from the H100's layer, §50).
  if [ "${ISO:-1}" = 1 ]; then
    for g in "" --gated; do
      echo "## isolated.py $g (split 1 / hybrid)"
      "${py[@]}" timeout 60 python3 bench/experiments/isolated.py $g --m 1,16 --splits 1,-1 --chain-only \
        --shapes 28672:4096,27648:5120,28672:3584 --all --replays 5 2>&1 | grep -E "^[0-9]+ [0-9]+ [0-9]+ \||/sk|/1 "
    done 2>&1 | tee -a $o/summary.txt
  fi
  gzip -f $o/*.csv
  echo "### summary"; cat $o/summary.txt
elif [ "${PART:-1}" = 37 ]; then
  # The hybrid inside the layer (perf-notes §49), on a build with sk-hybrid.patch
  # (plans' whole tiles off unless TGV_EXP_SK_HYBRID; TGV_EXP_SK_WAVES=1 plans stream-K
  # for every partial-wave grid of <= 32 tokens): the whole GPU suite as built, the
  # stream-K tests under hybrid 1 / 2 with those plans, memcheck on them, the chain
  # alternated twice (main's plans; waves with hybrid 0 / 1 / 2), the corpus back to
  # back both ways, then isolated.py on multi-wave weights while time is left.
  t0=$SECONDS
  [ "${SUITE:-1}" = 1 ] && gtests "GPU suite" $o/gpu-tests.txt timeout 200 $c/bin/tgv_gpu_tests
  for v in 1 2; do
    gtests "hybrid=$v tests" $o/sk-tests-$v.txt env TGV_EXP_SK_WAVES=1 TGV_EXP_SK_HYBRID=$v timeout 90 \
      $c/bin/tgv_gpu_tests --gtest_filter='*StreamK*:*Epilogue*:Tgv*Batch*'
  done
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [ "${MEMCHECK:-1}" = 1 ] && gtests "memcheck hybrid=1" $o/sk-memcheck.txt env TGV_EXP_SK_WAVES=1 TGV_EXP_SK_HYBRID=1 \
    timeout 75 $cs --tool memcheck --error-exitcode 9 $c/bin/tgv_gpu_tests \
    --gtest_filter='Grid/TgvStreamK.*:Sm90/EpilogueStreamK.*'
  chain_modes $o/chain-sk.txt 2 "main:" "sk0:TGV_EXP_SK_WAVES=1 TGV_EXP_SK_HYBRID=0" \
    "sk1:TGV_EXP_SK_WAVES=1 TGV_EXP_SK_HYBRID=1" "sk2:TGV_EXP_SK_WAVES=1 TGV_EXP_SK_HYBRID=2"
  TGV_EXP_SK_WAVES=1 TGV_LOG_DISPATCH=1 TGV_TUNING_FILE=$untuned timeout 30 $c/bin/tgv-bench --mode chain --m 1 2>&1 \
    | grep -E 'n=28672|stream' | head -4
  [ "${CORPUS:-1}" = 1 ] && corpus b2b-main ${CORPUS_S:-70} "" --m ${CORPUS_M:-1 4 16 32}
  [ "${CORPUS:-1}" = 1 ] && corpus b2b-sk ${CORPUS_S:-70} "TGV_EXP_SK_WAVES=1 TGV_EXP_SK_HYBRID=${SKH:-1}" --m ${CORPUS_M:-1 4 16 32}
  for v in 0 1 2; do
    [ $((SECONDS - t0)) -gt ${TOTAL_S:-380} ] && break
    echo "## isolated.py hybrid=$v"
    "${py[@]}" TGV_EXP_SK_HYBRID=$v timeout 40 python3 bench/experiments/isolated.py --m 1,16 --splits 1,-1 --chain-only \
      --shapes 28672:4096,18944:3584,27648:5120 --all --replays 5 2>&1 | tee $o/sk-iso-$v.txt \
      | grep -E "^[0-9]+ [0-9]+ [0-9]+ \||/sk|/1 "
  done
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 32 ]; then
  # The decode step untuned and tuned, its tuning file kept (the 70B-TP8 shard ran
  # slower tuned than untuned on an H100, perf-notes §47), then isolated.py on the
  # harness probe's small grids at M = 1 with the corpus's calls and copies.
  "${py[@]}" timeout ${E2E_S:-150} python3 bench/python/e2e_decode.py --tuning-file $o/e2e-tuning.json \
    --quick --batches 1 4 --csv $o/e2e.csv > $o/e2e.txt 2>&1
  echo "e2e rc=$?"; grep -E "^\| (8b|70b)|check|autotune" $o/e2e.txt | head -20
  # The old tuner's order alone (neighbours="kernels", perf-notes §48), its file kept too.
  "${py[@]}" timeout ${E2E_S:-150} python3 bench/python/e2e_decode.py --tuning-file $o/e2e-tuning-kernels.json \
    --tune-neighbours kernels --quick --batches 1 4 --csv $o/e2e-kernels.csv > $o/e2e-kernels.txt 2>&1
  echo "e2e kernels rc=$?"; grep -E "^\| (8b|70b)|check|autotune" $o/e2e-kernels.txt | head -20
  for v in "40 8" "75 4" "40 4" "75 8"; do
    echo "## isolated.py --calls ${v% *} --l2-factor ${v#* } (from $(date +%T))"
    "${py[@]}" timeout 40 python3 bench/experiments/isolated.py --calls ${v% *} --l2-factor ${v#* } --m 1 --splits 1 \
      --shapes 4096:512,2880:1024,4096:2560,1024:4608,14336:4096 --chain-only --replays 5 2>&1 | tee $o/iso-${v/ /-}.txt \
      | grep -E "^[0-9]+ [0-9]+ [0-9]+ \|"
  done
  for v in plain side plain side; do
    f=; [ $v = side ] && f=--side-stream
    "${py[@]}" timeout 40 python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench --m 1 $f \
      --shapes 4096x512 2880x1024 4096x2560 1024x4608 14336x4096 --csv $o/hp2-$v.csv > $o/hp2-$v.log 2>&1
    echo "## corpus $v rc=$? (to $(date +%T); n,k,m,plan,auto,tgv,torch)"; cut -d, -f2-4,9,10,12,13 $o/hp2-$v.csv | tail -n +2 | tr '\n' ' '; echo
    mv $o/hp2-$v.csv $o/hp2-$v-$SECONDS.csv
  done
  # Each implementation's graph replayed alone (no other graph between its replays),
  # as isolated.py replays one candidate's.
  for v in auto torch; do
    "${py[@]}" timeout 40 python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench --m 1 --impls $v \
      --shapes 4096x512 2880x1024 4096x2560 1024x4608 14336x4096 --csv $o/hp2-alone-$v.csv > $o/hp2-alone-$v.log 2>&1
    echo "## corpus $v alone rc=$? (to $(date +%T); n,k,m,plan,auto,cublas,tgv,torch)"
    cut -d, -f2-4,9-13 $o/hp2-alone-$v.csv | tail -n +2 | tr '\n' ' '; echo
  done
elif [ "${PART:-1}" = 29 ]; then
  # The first call of a session, whatever card came: an H200 has not run main whole
  # since 368c4a8; an H100 answers the M = 32 harness question (perf-notes §46).
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in
    *H200*)
      CHECK_S=${CHECK_S:-280} check
      chain
      corpus b2b ${CORPUS_S:-170} ""
      e2e ${E2E_S:-150}
      gzip -f $o/*.csv ;;
    *)
      bash bench/experiments/m32-probe.sh
      chain ;;
  esac
elif [ "${PART:-1}" = 9 ]; then
  for shape in "28672 4096" "8448 4096" "4096 14336"; do
    timeout 60 $c/bin/row-segments $shape
  done 2>&1 | tee $o/row-segments.txt
elif [ "${PART:-1}" = 49 ]; then
  # Every tile whole on a persistent grid (TGV_EXP_SK_HYBRID=3, perf-notes §55) for the
  # gated gate_up (TGV_EXP_SK_GATED=1 plans it as stream-K): its tests, the gated weights
  # alone, the chain, the decode step (~330 s on an H100).
  rr="TGV_EXP_SK_GATED=1 TGV_EXP_SK_HYBRID=3"
  if [ "${TESTS:-1}" = 1 ]; then
    env $rr timeout 150 $c/bin/tgv_gpu_tests --gtest_filter='*StreamK*:*Batch*' > $o/rr-tests.txt 2>&1
    echo "rr tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $o/rr-tests.txt | tr '\n' ' ')"
    timeout 150 $c/bin/tgv_gpu_tests --gtest_filter='*StreamK*:*Batch*' > $o/sk-tests.txt 2>&1
    echo "main's stream-K tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $o/sk-tests.txt | tr '\n' ' ')"
  fi
  for r in $(seq ${ISO:-2}); do
    for md in "main:" "rr:$rr"; do
      echo "## isolated ${md%%:*} round $r"
      "${py[@]}" env ${md#*:} timeout 100 python3 bench/experiments/isolated.py --gated --m 1,16 --splits 1,-1 \
        --shapes 28672:4096,37888:3584,14336:4096 --replays 5 --csv $o/iso-${md%%:*}-$r.csv 2>&1 | tail -n 14
    done
  done
  [ "${CHAIN:-1}" = 1 ] && chain_modes $o/chain.txt ${ROUNDS:-2} "land:" "skg:TGV_EXP_SK_GATED=1" "skg-rr:$rr"
  [ "${E2E:-1}" = 1 ] && e2e_ab "land:" "skg-rr:$rr"
  gzip -f $o/*.csv
elif [ "${PART:-1}" = 50 ]; then
  # The 8B layer's gate_up plans inside the layer (chain_plans.py --stage gate_up, perf-notes
  # §55): as planned, then with every stream-K variant a persistent grid (TGV_EXP_SK_HYBRID=3).
  for md in "sk:" "rr:TGV_EXP_SK_HYBRID=3"; do
    echo "## chain_plans ${md%%:*}"
    env ${md#*:} timeout ${PLANS_S:-150} python3 bench/experiments/chain_plans.py --model llama3.1-8b --stage gate_up \
      --rounds ${ROUNDS:-2} --out /tmp/chain-plans > $o/chain-plans-${md%%:*}.txt 2>&1
    echo "chain_plans rc=$?"; grep -v "^#   " $o/chain-plans-${md%%:*}.txt
  done
elif [ "${PART:-1}" = 52 ]; then
  # The 8B layer's gate_up -> down_proj boundary CTA by CTA (tgv-layer-trace, perf-notes §57;
  # carry build-gpu/carry/bin/tgv-layer-trace alone): main's plans, then the gate_up as a
  # persistent grid and as the hybrid; M 1 and 8, back to back and after a spacer.
  lt=$c/bin/tgv-layer-trace
  for md in "main:" "persistent:TGV_EXP_SK_GATED=1 TGV_EXP_SK_HYBRID=3" "hybrid:TGV_EXP_SK_GATED=1"; do
    for sp in 0 1; do for m in 1 8; do
      echo "## ${md%%:*} M $m spacer $sp"
      env ${md#*:} TRACE_CSV=$o/lt-${md%%:*}-m$m-s$sp.csv timeout 60 $lt $m 8 $sp 2>&1 | tail -n 4
    done; done
  done
  tar czf $o/layer-trace.tgz -C $o $(cd $o && ls lt-*.csv) && rm -f $o/lt-*.csv
elif [ "${PART:-1}" = 53 ]; then
  # Early launch_dependents (perf-notes §58): 1 on grids of more CTAs than SMs, 2 on every grid.
  gtests "tests, early trigger on every grid" $o/et-tests.txt env TGV_EXP_EARLY_TRIGGER=2 timeout 150 \
    $c/bin/tgv_gpu_tests --gtest_filter='*Pdl*:*Graph*:*StreamK*:*Chain*:*Split*:*Batch*' | tee $o/summary.txt
  chain_modes $o/chain.txt ${ROUNDS:-2} "main:" "et1:TGV_EXP_EARLY_TRIGGER=1" "et2:TGV_EXP_EARLY_TRIGGER=2"
  [ "${E2E:-1}" = 1 ] && e2e_ab "main:" "et1:TGV_EXP_EARLY_TRIGGER=1" | tee -a $o/summary.txt
  if [ "${CORPUS:-1}" = 1 ]; then
    corpus b2b-main ${CORPUS_S:-60} "" --m 1 4 16
    corpus b2b-et1 ${CORPUS_S:-60} TGV_EXP_EARLY_TRIGGER=1 --m 1 4 16
    tar czf $o/corpus.tgz -C $o $(cd $o && ls corpus-*) && rm -f $o/corpus-*
  fi
elif [ "${PART:-1}" = 54 ]; then
  # perf-notes §58: the early trigger on one-wave grids only (3) against every grid (2).
  chain_modes $o/chain.txt ${ROUNDS:-2} "main:" "et2:TGV_EXP_EARLY_TRIGGER=2" "et3:TGV_EXP_EARLY_TRIGGER=3"
  [ "${E2E:-1}" = 1 ] && e2e_ab "main:" "et3:TGV_EXP_EARLY_TRIGGER=3"
elif [ "${PART:-1}" = 55 ]; then
  # perf-notes §58: the early trigger on one-wave grids under 48 MB or gated (4) as the default?
  gtests "GPU suite, early trigger 4" $o/et4-tests.txt env TGV_EXP_EARLY_TRIGGER=4 timeout 200 \
    $c/bin/tgv_gpu_tests | tee $o/summary.txt
  gtests "PDL tests, early trigger 3" $o/et3-tests.txt env TGV_EXP_EARLY_TRIGGER=3 timeout 60 \
    $c/bin/tgv_gpu_tests --gtest_filter='*Pdl*:*Graph*:*StreamK*:*Chain*:*Split*:*Batch*' | tee -a $o/summary.txt
  chain_modes $o/chain.txt ${ROUNDS:-2} "main:" "et3:TGV_EXP_EARLY_TRIGGER=3" "et4:TGV_EXP_EARLY_TRIGGER=4" \
    "et3p:TGV_EXP_EARLY_TRIGGER=3 TGV_EXP_PACE_WAITED=1"
  [ "${E2E:-1}" = 1 ] && e2e_ab "main:" "et4:TGV_EXP_EARLY_TRIGGER=4" | tee -a $o/summary.txt
elif [ "${PART:-1}" = 56 ]; then
  # perf-notes §58: the corpus both ways under main and 4, then the split-K stress under 4.
  for mode in b2b iso; do
    flag=; s=60; [ $mode = iso ] && flag=--isolated s=100
    corpus $mode-main ${CORPUS_S:-$s} "" $flag --m 1 4 16
    corpus $mode-et4 ${CORPUS_S:-$s} TGV_EXP_EARLY_TRIGGER=4 $flag --m 1 4 16
    # Every one-wave grid early, its waited CTAs paced: does pacing take back the large weights' loss?
    [ $mode = b2b ] && corpus b2b-et3p ${CORPUS_S:-$s} "TGV_EXP_EARLY_TRIGGER=3 TGV_EXP_PACE_WAITED=1" --m 1 4 16
  done | tee $o/summary.txt
  tar czf $o/corpus.tgz -C $o $(cd $o && ls corpus-*) && rm -f $o/corpus-*
  ss=${STRESS_S:-40}; stress et4 TGV_EXP_EARLY_TRIGGER=4 | tee -a $o/summary.txt
elif [ "${PART:-1}" = 58 ]; then
  # perf-notes §58/§59: is the early trigger on one-wave grids under 48 MB or gated (4) the default?
  VAR=TGV_EXP_EARLY_TRIGGER=4 VN=et4 PART=62 bash $0
elif [ "${PART:-1}" = 59 ]; then
  check | tee $o/summary.txt
  chain | tee -a $o/summary.txt
  echo "dispatch log: $(grep -c 'trigger at entry' $o/chain-1.txt) of $(grep -c '^\[tgv\]' $o/chain-1.txt) plans trigger at entry" | tee -a $o/summary.txt
  grep '^\[tgv\]' $o/chain-1.txt | head -20
  cat $o/chain-1.txt $o/chain-2.txt > $o/chain.txt && rm -f $o/chain-[12].txt
  corpus b2b ${CORPUS_S:-60} "" --m 1 4 16 | tee -a $o/summary.txt
  tar czf $o/corpus-b2b.tgz -C $o $(cd $o && ls corpus-b2b*) && rm -f $o/corpus-b2b*
  [ "${E2E:-1}" = 1 ] && E2E_ROUNDS=1 e2e_ab "main:" "off:TGV_EXP_EARLY_TRIGGER=0" | tee -a $o/summary.txt
elif [ "${PART:-1}" = 60 ]; then
  t0=$SECONDS
  [ "${CHECK:-1}" = 1 ] && CHECK_S=${CHECK_S:-260} check | tee $o/summary.txt
  corpus b2b ${CORPUS_S:-120} "" | tee -a $o/summary.txt
  tar czf $o/corpus-b2b.tgz -C $o $(cd $o && ls corpus-b2b*) && rm -f $o/corpus-b2b.csv $o/corpus-b2b.log
  chain | tee -a $o/summary.txt
  cat $o/chain-1.txt $o/chain-2.txt > $o/chain.txt && rm -f $o/chain-[12].txt
  left=$((${TOTAL_S:-570} - (SECONDS - t0)))
  echo "decode step: $left s left" | tee -a $o/summary.txt
  # E2E_TUNE=0: the untuned column only (the tuned one autotunes first).
  tune=(--tuning-file $o/e2e-tuning.json); [ "${E2E_TUNE:-1}" = 1 ] || tune=(--no-tune)
  "${py[@]}" timeout $left python3 bench/python/e2e_decode.py "${tune[@]}" \
    --quick --batches 1 4 16 --csv $o/e2e.csv > $o/e2e.txt 2>&1
  echo "e2e rc=$?"; grep -E "^\| (8b|70b)|check|autotune" $o/e2e.txt | head -24
  # Eight files come back: gpu, clocks, summary, check, check-logs, corpus, chain, e2e.
  tar czf $o/e2e.tgz -C $o $(cd $o && ls e2e*) && rm -f $o/e2e.txt $o/e2e.csv $o/e2e-tuning.json
  cat $o/summary.txt
elif [ "${PART:-1}" = 61 ]; then
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in
    *H200*) PART=60 bash $0 ;;
    *)
      PLANS_S=${PLANS_S:-330} ROUNDS=${ROUNDS:-2} MODEL=llama3.1-70b-tp8 PART=7 bash $0
      [ -x $c/tgv-trace ] && PART=57 bash $0 | grep -E "^###|^median" | head -60 ;;
  esac
elif [ "${PART:-1}" = 62 ]; then
  v=${VAR:-TGV_EXP_EARLY_TRIGGER=3 TGV_EXP_PACE_WAITED=1}; vn=${VN:-et3p}
  gtests "PDL tests, $vn" $o/$vn-tests.txt env $v timeout 60 \
    $c/bin/tgv_gpu_tests --gtest_filter='*Pdl*:*Graph*:*StreamK*:*Chain*:*Split*:*Batch*' | tee $o/summary.txt
  corpus b2b-main ${CORPUS_S:-60} "" --m 1 4 16 | tee -a $o/summary.txt
  corpus b2b-$vn ${CORPUS_S:-60} "$v" --m 1 4 16 | tee -a $o/summary.txt
  tar czf $o/corpus-b2b.tgz -C $o $(cd $o && ls corpus-b2b-*) && rm -f $o/corpus-b2b-*
  chain_modes $o/chain.txt ${ROUNDS:-2} "main:" "$vn:$v"
  [ "${E2E:-1}" = 1 ] && E2E_ROUNDS=${E2E_ROUNDS:-1} e2e_ab "main:" "$vn:$v" | tee -a $o/summary.txt
  corpus iso-main ${ISO_S:-95} "" --isolated --m 1 4 16 | tee -a $o/summary.txt
  corpus iso-$vn ${ISO_S:-95} "$v" --isolated --m 1 4 16 | tee -a $o/summary.txt
  tar czf $o/corpus-iso.tgz -C $o $(cd $o && ls corpus-iso-*) && rm -f $o/corpus-iso-*
elif [ "${PART:-1}" = 63 ]; then
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in
    *H200*) PART=60 bash $0 ;;
    *) ISO=0 PART=66 bash $0; PART=67 bash $0 ;;
  esac
elif [ "${PART:-1}" = 64 ]; then
  # PART=63 for a call with ~4 minutes of device time left: on an H200 the issues'
  # speed criteria without the check (corpus back to back at every M, chain, the
  # decode step in what is left of TOTAL_S); on another card the early trigger's A/B lean.
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in
    *H200*) CHECK=0 E2E_TUNE=0 TOTAL_S=${TOTAL_S:-230} CORPUS_S=${CORPUS_S:-100} PART=60 bash $0 ;;
    *) PART=67 bash $0 ;;
  esac
elif [ "${PART:-1}" = 65 ]; then
  # perf-notes §63: does a 5% margin above 32 tokens hand fewer points to cuBLASLt without new losses?
  v="TGV_EXP_CUBLAS_MARGIN_LARGE_M=${MARGIN:-0.05}"
  for r in $(seq ${ROUNDS:-2}); do
    corpus b2b-main-$r ${CORPUS_S:-60} "" --m 64 128
    corpus b2b-margin-$r ${CORPUS_S:-60} "$v" --m 64 128
  done | tee $o/summary.txt
  tar czf $o/corpus-b2b.tgz -C $o $(cd $o && ls corpus-b2b-*) && rm -f $o/corpus-b2b-*
elif [ "${PART:-1}" = 66 ]; then
  for r in $(seq ${ROUNDS:-2}); do
    corpus b2b-main-$r ${CORPUS_S:-60} "" --m 32 64 128
    corpus b2b-et0-$r ${CORPUS_S:-60} TGV_EXP_EARLY_TRIGGER=0 --m 32 64 128
    # The bound at 8 MB: across builds the small weights gained from the trigger at 64 tokens.
    corpus b2b-mb8-$r ${CORPUS_S:-60} "TGV_EXP_EARLY_TRIGGER=4 TGV_EXP_EARLY_TRIGGER_MB=8" --m 32 64 128
  done | tee $o/summary.txt
  if [ "${ISO:-1}" = 1 ]; then
    corpus iso-main ${ISO_S:-60} "" --isolated --m 64
    corpus iso-et0 ${ISO_S:-60} TGV_EXP_EARLY_TRIGGER=0 --isolated --m 64
  fi | tee -a $o/summary.txt
  tar czf $o/corpus.tgz -C $o $(cd $o && ls corpus-*) && rm -f $o/corpus-*
elif [ "${PART:-1}" = 67 ]; then
  wp="TGV_EXP_H100_WIDE_PART=${WP:-0.75}"
  for r in $(seq ${ROUNDS:-2}); do
    corpus b2b-main-$r ${CORPUS_S:-45} "" --m 64
    corpus b2b-wp-$r ${CORPUS_S:-45} "$wp" --m 64
    corpus b2b-et0-$r ${CORPUS_S:-45} TGV_EXP_EARLY_TRIGGER=0 --m 64
    corpus b2b-wpet0-$r ${CORPUS_S:-45} "$wp TGV_EXP_EARLY_TRIGGER=0" --m 64
  done | tee $o/summary-67.txt
  tar czf $o/corpus-67.tgz -C $o $(cd $o && ls corpus-b2b-*) && rm -f $o/corpus-b2b-*
elif [ "${PART:-1}" = 57 ]; then
  # perf-notes §58: where a large one-wave weight's time goes under the early trigger.
  for r in 1 2; do
    for shape in "5120 25600 16" "4096 14336 16" "4096 1024 64"; do
      for lead in 0 4; do
        for et in 0 1; do
          set -- $shape
          echo "### trace $1x$2 calls $3 lead $lead (waited CTAs paced too) early $et round $r"
          TRACE_PACE_WAITED=1 TRACE_EARLY_TRIGGER=$et TRACE_CSV=$o/trace-$1x$2-l$lead-e$et-r$r.csv timeout 30 $c/tgv-trace $1 $2 1 1 12 1 $3 \
            1 0 $lead 1 0 2>&1 | grep -E "graph replay|^median|^kernel [0-9]+:"
        done
      done
    done
  done | tee $o/trace.txt
  tar czf $o/trace.tgz -C $o $(cd $o && ls trace-*.csv) && rm -f $o/trace-*.csv
elif [ "${PART:-1}" = 48 ]; then
  # A read whose CTAs claim pieces as they go against equal shares (perf-notes §54;
  # on an H100 no faster): the layers' weights on their grids (bench/experiments/balance.sh).
  for run in "6144 4096 96 132" "4096 14336 64 132" "8192 3584 128 132" "8192 1024 128" "28672 4096 132"; do
    timeout 60 $c/bin/balance $run
  done 2>&1 | tee $o/balance.txt
else
  [ "${CHAIN:-1}" = 1 ] && chain
  for mode in ${MODES:-b2b iso}; do
    flag=; [ $mode = iso ] && flag=--isolated
    corpus $mode 170 "" $flag
  done
  [ "${E2E:-1}" = 1 ] && e2e 200
  gzip -f $o/*.csv
fi
