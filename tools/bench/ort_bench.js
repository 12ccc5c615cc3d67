// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: times one zoo model on ONNX Runtime's CPU provider, the
 * baseline of the model benchmark (tools/bench/models.sh). Benchmark
 * only: onnxruntime-node is never a dependency of vtpu.
 *
 * Usage: node ort_bench.js MODEL_DIR THREADS RUNS
 * Feeds MODEL_DIR/test_data_set_0/input_*.npy to model.onnx in the
 * order of the model's inputs, runs it three times to warm up, then
 * RUNS times, and prints "median_ms N" (the median of the RUNS).
 */
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

/* A .npy file (format 1.0 or 2.0, C order) as an ort.Tensor. */
function loadNpy(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 1, 6) !== 'NUMPY')
    throw new Error(`${file}: not a .npy file`);
  const v2 = b[6] >= 2;
  const hlen = v2 ? b.readUInt32LE(8) : b.readUInt16LE(8);
  const hstart = v2 ? 12 : 10;
  const header = b.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header))
    throw new Error(`${file}: Fortran order`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1]
    .split(',').filter((s) => s.trim()).map((s) => parseInt(s, 10));
  const raw = b.subarray(hstart + hlen);
  const ab = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length);
  const types = {
    '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
    '<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array],
  };
  if (!types[descr])
    throw new Error(`${file}: dtype ${descr} not handled`);
  const [type, Ctor] = types[descr];
  return new ort.Tensor(type, new Ctor(ab), dims);
}

async function main() {
  const [dir, threads, runs] = process.argv.slice(2);
  const n = parseInt(runs, 10);
  const session = await ort.InferenceSession.create(
    path.join(dir, 'model.onnx'), {
      intraOpNumThreads: parseInt(threads, 10), interOpNumThreads: 1,
      executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
  const set = path.join(dir, 'test_data_set_0');
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    feeds[name] = loadNpy(path.join(set, `input_${i}.npy`));
  });
  for (let i = 0; i < 3; i++)
    await session.run(feeds);
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(`median_ms ${times[Math.floor(n / 2)].toFixed(3)}`);
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message}`);
  process.exit(1);
});
