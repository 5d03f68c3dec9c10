// driver.js — the Node side of package tfjs (internal/tfjs). Go runs it with
// `node -e <this file>`: it reads one JSON request from stdin, runs every job
// of it in TensorFlow.js, and writes one JSON response to file descriptor 3.
// stdout and stderr are left to the libraries (tfjs prints notices); Go keeps
// their tail for error messages. See tfjs.go for the protocol's Go types.
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const util = require('util');

const t0 = performance.now(); // ms since the process started: Node's own start-up

// Everything printed by a library goes to stderr, never to a descriptor Go
// parses.
for (const k of ['log', 'info', 'debug', 'warn']) {
  console[k] = (...args) => process.stderr.write(util.format(...args) + '\n');
}

function reply(obj) {
  fs.writeSync(3, JSON.stringify(obj));
}

// fail ends the process with a request-level error (no job can run).
function fail(msg) {
  reply({error: msg});
  process.exit(0);
}

let req;

function load(name) {
  const p = path.join(req.dir, '@tensorflow', name);
  try {
    return require(p);
  } catch (e) {
    fail(`loading @tensorflow/${name} from ${req.dir}: ${e.message.split('\n')[0]}`);
  }
}

let tf, converter, t1, l0;

const bytesPerElement = {float32: 4, int32: 4, bool: 1, complex64: 8};
const quantizedBytes = {uint8: 1, uint16: 2, float16: 2};

// nodeName strips an output index (":0") from a tensor name, as tfjs does.
function nodeName(name) {
  const i = name.indexOf(':');
  return i < 0 ? name : name.slice(0, i);
}

// readArtifacts reads model.json and its shards, in manifest order, into the
// ModelArtifacts that tf.io.fromMemory takes.
function readArtifacts(modelPath) {
  let mj;
  try {
    mj = JSON.parse(fs.readFileSync(modelPath, 'utf8'));
  } catch (e) {
    throw new Error(`reading ${modelPath}: ${e.message}`);
  }
  if (mj == null || typeof mj !== 'object' || mj.modelTopology == null) {
    throw new Error(`${modelPath} is not a TensorFlow.js model (no modelTopology)`);
  }
  if (mj.format != null && mj.format !== 'graph-model') {
    throw new Error(`${modelPath} has format "${mj.format}"; only "graph-model" (a GraphDef) is supported`);
  }
  checkTopology(modelPath, mj.modelTopology);
  const base = path.dirname(modelPath);
  const specs = [];
  const shards = [];
  let need = 0;
  let sized = true;
  for (const group of mj.weightsManifest || []) {
    for (const p of group.paths || []) {
      if (path.isAbsolute(p) || path.normalize(p).split(path.sep).includes('..')) {
        throw new Error(`${modelPath}: weight shard path "${p}" leaves the model's directory`);
      }
      const file = path.join(base, p);
      try {
        shards.push(fs.readFileSync(file));
      } catch (e) {
        throw new Error(`${modelPath}: reading weight shard ${file}: ${e.message}`);
      }
    }
    for (const w of group.weights || []) {
      specs.push(w);
      const n = (w.shape || []).reduce((a, b) => a * b, 1);
      const size = w.quantization ? quantizedBytes[w.quantization.dtype] : bytesPerElement[w.dtype];
      if (size === undefined) {
        sized = false;
      } else {
        need += n * size;
      }
    }
  }
  const all = Buffer.concat(shards);
  if (sized && all.length < need) {
    throw new Error(`${modelPath}: the weight shards hold ${all.length} bytes, the manifest needs ${need}`);
  }
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
  return {
    modelTopology: mj.modelTopology,
    format: mj.format,
    generatedBy: mj.generatedBy,
    convertedBy: mj.convertedBy,
    signature: mj.signature,
    userDefinedMetadata: mj.userDefinedMetadata,
    modelInitializer: mj.modelInitializer,
    initializerSignature: mj.initializerSignature,
    weightSpecs: specs,
    weightData,
  };
}

// checkTopology rejects what tfjs would fail on with an obscure message: a
// node reading a node that does not exist.
function checkTopology(modelPath, topo) {
  const nodes = Array.isArray(topo.node) ? topo.node : [];
  const names = new Set(nodes.map(n => n.name));
  for (const n of nodes) {
    for (const input of n.input || []) {
      const src = nodeName(input.startsWith('^') ? input.slice(1) : input);
      if (!names.has(src)) {
        throw new Error(`${modelPath}: node "${n.name}" reads "${input}", which is not a node of the graph`);
      }
    }
  }
}

function typedArray(t) {
  const b = Buffer.from(t.data, 'base64');
  const copy = new Uint8Array(b.length);
  copy.set(b);
  switch (t.dtype) {
    case 'float32': return new Float32Array(copy.buffer);
    case 'int32': return new Int32Array(copy.buffer);
    case 'bool': return copy;
  }
  throw new Error(`unsupported input dtype "${t.dtype}"`);
}

function tensorBytes(data) {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

// checkFeeds validates the caller's input names against the model's inputs
// and signature before tfjs sees them, for a message that lists the inputs.
function checkFeeds(model, feeds) {
  const known = new Map();
  for (const i of model.inputs) known.set(i.name, i);
  const sig = (model.modelSignature && model.modelSignature.inputs) || {};
  for (const [key, t] of Object.entries(sig)) {
    const byNode = known.get(nodeName(t.name));
    if (byNode) {
      known.set(key, byNode);
      known.set(t.name, byNode);
    }
  }
  const describe = () => model.inputs.map(i => `${i.name} [${i.shape}] ${i.dtype}`).join(', ');
  for (const name of Object.keys(feeds)) {
    if (!known.has(name)) {
      throw new Error(`input "${name}" is not an input of the model; its inputs are: ${describe()}`);
    }
  }
  const given = new Set(Object.keys(feeds).map(n => nodeName(known.get(n).name)));
  const missing = model.inputs.filter(i => !given.has(i.name)).map(i => i.name);
  if (missing.length > 0) {
    throw new Error(`no value given for the model's input(s) ${missing.join(', ')}; its inputs are: ${describe()}`);
  }
}

// compileOrder asks the executor for its schedule: GraphExecutor.compile(
// inputs, outputNodes).orderedNodes (tfjs-converter 4.22,
// src/executor/graph_executor.ts), the list that execute() walks. compile is
// not public API; it takes the inputs keyed by node name (as mapInputs
// returns them) and Node objects. It throws when the subgraph holds a
// dynamic op; the caller then uses executeAsync.
function compileOrder(model, feeds, outputs) {
  const ex = model.executor;
  if (!ex || typeof ex.compile !== 'function' || !ex.graph) {
    throw new Error('this tfjs has no GraphExecutor.compile: the harness needs tfjs-converter 4.22');
  }
  const mapped = ex.mapInputs(feeds);
  const outNodes = ex.mapOutputs(outputs).map(n => ex.graph.nodes[nodeName(n)]);
  outNodes.forEach((n, i) => {
    if (n == null) {
      throw new Error(`output "${outputs[i]}" is not a node of the graph; its outputs are: ${model.outputNodes.join(', ')}`);
    }
  });
  return ex.compile(mapped, outNodes).orderedNodes.map(n => n.name);
}

// hookNodes records, for every node the executor runs, the dtype and shape
// of each tensor its op returned, the kernels the profile recorded up to
// its end and the engine's byte count before and after the executor
// disposed what that node was the last consumer of. The
// hooks wrap instance methods that execute() (checkTensorForDisposalWith-
// NodeLiveUntilInfo) and executeAsync() (checkTensorForDisposal) call right
// after each node's op; they change nothing that tfjs computes.
function hookNodes(model, records) {
  const ex = model.executor;
  const engine = tf.engine();
  const wrap = (method, nodeOf, mapOf) => {
    const orig = ex[method];
    if (typeof orig !== 'function') {
      throw new Error(`this tfjs has no GraphExecutor.${method}: the harness needs tfjs-converter 4.22`);
    }
    ex[method] = function(...args) {
      const node = nodeOf(args);
      const tensorMap = mapOf(args);
      const outs = ((tensorMap && tensorMap[node.name]) || []).map(t => t ? {dtype: t.dtype, shape: t.shape} : null);
      const before = engine.state.numBytes;
      const r = orig.apply(this, args);
      const prof = engine.state.profiling ? engine.state.activeProfile.kernels.length : -1;
      records.push({name: node.name, op: node.op, outputs: outs, kernelsEnd: prof, bytesBeforeFree: before,
        bytesAfterFree: engine.state.numBytes, tensorsAfterFree: engine.state.numTensors});
      return r;
    };
    return () => { ex[method] = orig; };
  };
  const u1 = wrap('checkTensorForDisposalWithNodeLiveUntilInfo', a => a[0], a => a[1]);
  const u2 = wrap('checkTensorForDisposal', a => a[1], a => a[2]);
  let hooked = true;
  return () => {
    if (hooked) { u1(); u2(); hooked = false; }
  };
}

function asList(r) {
  return Array.isArray(r) ? r : [r];
}

async function execute(model, feeds, outputs, useAsync) {
  if (useAsync) return asList(await model.executeAsync(feeds, outputs));
  return asList(model.execute(feeds, outputs));
}

function digest(tensors) {
  const h = crypto.createHash('sha256');
  for (const t of tensors) {
    h.update(`${t.dtype}[${t.shape}]`);
    h.update(tensorBytes(t.dataSync()));
  }
  return h.digest('hex');
}

async function runJob(job) {
  const r = {timing: {}};
  const s0 = performance.now();
  if (tf.getBackend() !== job.backend) {
    if (!(await tf.setBackend(job.backend))) {
      throw new Error(`tfjs could not initialise its ${job.backend} backend`);
    }
  }
  await tf.ready();
  r.backend = tf.getBackend();
  const s1 = performance.now();
  const artifacts = readArtifacts(job.model);
  let model;
  try {
    model = await converter.loadGraphModel(tf.io.fromMemory(artifacts));
  } catch (e) {
    throw new Error(`loading ${job.model} in tfjs: ${e.message}`);
  }
  const s2 = performance.now();
  r.timing.backendMs = s1 - s0;
  r.timing.loadMs = s2 - s1;
  const feeds = {};
  try {
    checkFeeds(model, job.inputs);
    for (const [name, t] of Object.entries(job.inputs)) {
      feeds[name] = tf.tensor(typedArray(t), t.shape, t.dtype);
    }
    const outputs = job.outputs && job.outputs.length > 0 ? job.outputs : model.outputNodes;
    r.outputNames = outputs;
    let useAsync = false;
    try {
      const order = compileOrder(model, feeds, outputs);
      if (job.order) r.orderedNodes = order;
    } catch (e) {
      if (!/executeAsync/.test(e.message)) throw e;
      useAsync = true;
    }
    r.async = useAsync;
    // The nodes of the first execution (the profiled one when profiling).
    const records = [];
    const unhook = hookNodes(model, records);
    let first = null;
    r.digests = [];
    r.runMs = [];
    try {
      if (job.profile) {
        const mem = tf.memory();
        const baseline = {bytes: mem.numBytes, tensors: mem.numTensors};
        let p;
        try {
          p = await tf.profile(async () => {
            first = await execute(model, feeds, outputs, useAsync);
          });
        } finally {
          tf.engine().state.profiling = false; // tf.profile leaves it on when the query throws
        }
        // The profile object is the engine's and is reused: copy it out.
        r.memory = {
          baselineBytes: baseline.bytes, baselineTensors: baseline.tensors,
          peakBytes: p.peakBytes, newBytes: p.newBytes, newTensors: p.newTensors,
          unreliable: !!tf.memory().unreliable,
        };
        r.kernels = p.kernels.map(k => ({
          name: k.name, bytesAdded: k.bytesAdded, totalBytes: k.totalBytesSnapshot,
          tensorsAdded: k.tensorsAdded, totalTensors: k.totalTensorsSnapshot,
          outputShapes: k.outputShapes,
          timeMs: typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : null,
        }));
        r.nodes = records.slice();
        unhook();
        if (!job.shapesOnly) r.digests.push(digest(first));
      }
      for (let i = 0; i < job.warmup; i++) {
        tf.dispose(await execute(model, feeds, outputs, useAsync));
      }
      for (let i = 0; i < job.runs; i++) {
        if (i === 0 && r.nodes == null) records.length = 0;
        const a = performance.now();
        const outs = await execute(model, feeds, outputs, useAsync);
        for (const t of outs) t.dataSync();
        r.runMs.push(performance.now() - a);
        if (r.nodes == null) {
          r.nodes = records.slice();
          unhook();
        }
        if (!job.shapesOnly) r.digests.push(digest(outs));
        if (first == null) {
          first = outs;
        } else {
          tf.dispose(outs);
        }
      }
    } finally {
      unhook();
    }
    // In shapes-only mode an output is its dtype and shape: asking for
    // every value of a model stays a small transfer.
    r.outputs = first.map((t, i) => {
      const o = {name: outputs[i], dtype: t.dtype, shape: t.shape};
      if (!job.shapesOnly) o.data = tensorBytes(t.dataSync()).toString('base64');
      return o;
    });
    tf.dispose(first);
  } finally {
    tf.dispose(Object.values(feeds));
    model.dispose();
  }
  return r;
}

async function readRequest() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

(async () => {
  try {
    req = await readRequest();
  } catch (e) {
    fail('reading the request: ' + e.message);
  }
  l0 = performance.now();
  tf = load('tfjs-core');
  load('tfjs-backend-cpu');
  load('tfjs-backend-wasm');
  converter = load('tfjs-converter');
  t1 = performance.now();
  const results = [];
  for (const job of req.jobs) {
    try {
      results.push(await runJob(job));
    } catch (e) {
      results.push({error: (e && e.message) || String(e)});
    }
  }
  reply({startupMs: t0, tfjsLoadMs: t1 - l0, version: tf.version_core, results});
})().catch(e => fail((e && e.stack) || String(e)));
