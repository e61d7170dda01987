/* Shared by the controls that run a trained model in the page (the text generator, the
   induction playground, the coreference and translation explorers): the weights, and the
   pieces every model is made of, in double precision with the operations of
   attention_lib.gpt.layers in the same order. */
const LN_EPS = 1e-5, GELU_C = Math.sqrt(2 / Math.PI);
/* base64 to bytes */
function base64Bytes(text) {
  const raw = atob(text.trim()), bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
  return bytes;
}
/* The bytes a data element of class lc-blob holds: in a notebook, as base64 in the element; on
   the website, in a file of its own (its data-src), fetched now. */
async function blobBytes(blob) {
  if (!blob.dataset.src) { return base64Bytes(blob.textContent); }
  const response = await fetch(new URL(blob.dataset.src, document.baseURI));
  if (!response.ok) { throw new Error("the weights did not load (" + response.status + ")"); }
  return new Uint8Array(await response.arrayBuffer());
}
/* float16 bits to a number (every float16 is exact in double precision) */
function half(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) { return s * f * Math.pow(2, -24); }
  if (e === 31) { return f ? NaN : s * Infinity; }
  return s * (1 + f / 1024) * Math.pow(2, e - 15);
}
/* Little-endian floats of `width` bytes (2, 4 or 8) to arrays by name: {shape, data}, with
   `layout` = [[name, shape, offset in numbers], ...]. */
function decodeWeights(bytes, layout, width) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const read = { 2: (at) => half(view.getUint16(at, true)), 4: (at) => view.getFloat32(at, true),
                 8: (at) => view.getFloat64(at, true) }[width];
  const params = {};
  layout.forEach(([name, shape, offset]) => {
    const size = shape.reduce((a, b) => a * b, 1), data = new Float64Array(size);
    for (let i = 0; i < size; i++) { data[i] = read(width * (offset + i)); }
    params[name] = { shape: shape, data: data };
  });
  return params;
}
/* x (n,) @ m (n, e) + b (e,), m row-major; no bias when b is null */
function linear(x, m, b) {
  const e = m.shape[1], y = new Float64Array(e);
  for (let i = 0; i < x.length; i++) {
    const xi = x[i], row = i * e;
    for (let j = 0; j < e; j++) { y[j] += xi * m.data[row + j]; }
  }
  if (b) { for (let j = 0; j < e; j++) { y[j] += b.data[j]; } }
  return y;
}
/* layer norm over the vector, population variance: (x - mu) * rstd * gamma + beta */
function layerNorm(x, gamma, beta) {
  const d = x.length;
  let mu = 0; for (let i = 0; i < d; i++) { mu += x[i]; } mu /= d;
  let v = 0; for (let i = 0; i < d; i++) { v += (x[i] - mu) * (x[i] - mu); } v /= d;
  const rstd = 1 / Math.sqrt(v + LN_EPS), y = new Float64Array(d);
  for (let i = 0; i < d; i++) { y[i] = (x[i] - mu) * rstd * gamma.data[i] + beta.data[i]; }
  return y;
}
/* GELU, tanh approximation, in place */
function gelu(h) {
  for (let j = 0; j < h.length; j++) {
    const t = Math.tanh(GELU_C * (h[j] + 0.044715 * (h[j] * h[j] * h[j])));
    h[j] = 0.5 * h[j] * (1 + t);
  }
  return h;
}
