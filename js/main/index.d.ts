// Type declarations for oxinfer-web (js/main/index.js).
import type { CacheOptions, DownloadProgress } from './cache.js';
export type { CacheOptions, DownloadProgress, CachedModel } from './cache.js';
export { listCachedModels, deleteCachedModel } from './cache.js';

/** Error codes: the names of src/base/err.h's OX_E_* (js/shared/abi.js `codes`). */
export type OxErrorCode =
  | 'IO' | 'FORMAT' | 'TRUNCATED' | 'UNSUPPORTED' | 'MISSING' | 'CONFIG'
  | 'NOMEM' | 'RANGE' | 'ABORTED' | 'STATE';

/** Every failure of the package (main thread, engine worker, host files, chat templates):
 *  `code` says what kind, `message` names the file and the problem. Aborts are
 *  `code: 'ABORTED'` with `name: 'AbortError'`. */
export class OxError extends Error {
  constructor(code: OxErrorCode, message: string);
  code: OxErrorCode;
}

/** A model file: a Node path, an http(s) URL (read with Range requests: the server must answer
 *  206; cross-origin, it must allow the Range header, and expose Content-Range or answer HEAD
 *  with Content-Length; a changed ETag / Last-Modified between reads is an IO error), a
 *  File/Blob, an OPFS FileSystemFileHandle (dedicated worker only: the engine's worker), or one
 *  of those with an explicit name (the name decides how config.json / tokenizer.json / ... are
 *  recognised). In a browser a plain string is a URL relative to the page. In Node, a
 *  file-backed Blob (fs.openAsBlob) cannot be sent to a thread: pass its path. */
export type ModelSource =
  | string
  | URL
  | Blob
  | FileHandle
  | { path: string; name?: string }
  | { url: string | URL; name?: string }
  | { blob: Blob; name?: string }
  | { handle: FileHandle; name?: string };

/** An OPFS file handle, the part of the DOM's FileSystemFileHandle the engine uses (declared
 *  here so the types compile without the DOM lib; a FileSystemFileHandle is one). */
export interface FileHandle {
  readonly kind: 'file';
  readonly name: string;
  getFile(): Promise<Blob>;
}

export interface LoadProgress {
  /** bytes of weights read so far */
  loaded: number;
  total: number;
  /** loaded / total, 0..1 */
  fraction: number;
}

export interface LoadOptions {
  /** Threads for the matmuls (default: hardware threads, at most 8). The single-threaded build
   *  always uses 1. */
  threads?: number;
  /** Precision of bf16/f16/f32 checkpoints in memory (GGUF quant types stay as stored). */
  quant?: 'stored' | 'bf16' | 'q8' | 'q4';
  /** Read token-embedding rows from the host per token too, not only the PLE table. Unset: on
   *  the WebGPU backend yes (the tied head lives on the GPU, so the table leaves wasm memory),
   *  on the CPU no. */
  tablesOnHost?: boolean;
  /** The Gemma 4 MTP drafter for speculative: {method: 'mtp'}: a gemma4-assistant GGUF (as
   *  llama.cpp's converter writes it) made for this model; checked against it at load. */
  drafter?: ModelSource | ModelSource[];
  /** Context length of the session: integer >= 0, 0 = the model's maximum (default). */
  maxContext?: number;
  /** Fail before allocating if the weights need more than this many bytes (0 = no limit). */
  maxResident?: number;
  /** Linear weights left on the host (the model file) and read per use into a bounded cache
   *  of `weightCache` bytes, so a model larger than memory runs: 'experts' the routed experts
   *  of MoE models (read per token as the router picks them, LRU), 'all' every linear weight
   *  of the layers (the cache keeps a fixed share, the rest is read each token); token_embd,
   *  the PLE projection and the routers stay resident. Streamed weights run as stored (a
   *  `quant` conversion is UNSUPPORTED). Default 'none'. Logits are identical either way. */
  streamWeights?: 'none' | 'experts' | 'all';
  /** Bytes for streamed weights (cache plus the transit area of one layer), integer >= 1;
   *  default 512 MiB; RANGE when less than one layer's streamed weights. */
  weightCache?: number;
  /** How the KV cache stores K and V: 'f32' (default: logits as the float reference), 'f16'
   *  (half the memory), 'q8_0' (about a quarter: 34 bytes per 32 values). Sliding-window
   *  layers keep only their window (plus one micro-batch) whatever the type. */
  kvType?: 'f32' | 'f16' | 'q8_0';
  /** Where the forward runs (docs/architecture.md "GPU backend"). 'auto' (default): WebGPU when
   *  a hardware adapter exists (and SharedArrayBuffer: Node, or a crossOriginIsolated page),
   *  else the CPU; 'webgpu': WebGPU or an UNSUPPORTED error; 'cpu'. A model the GPU backend
   *  cannot run whole (MoE, streamed weights, a weight type with no kernel) runs on the CPU,
   *  the reason in `info.backendNote`. */
  backend?: 'auto' | 'webgpu' | 'cpu';
  /** With backend 'webgpu': accept a software adapter (lavapipe, SwiftShader), as tests do. */
  allowFallbackAdapter?: boolean;
  /** On the GPU backend: run only the first N layers there, the rest (and the head) on the CPU
   *  inside the same forward (0, default: all that fit); `info.gpu.layers` says where the
   *  split is. */
  gpuLayers?: number;
  /** On the GPU backend: bytes of weights the GPU may hold (0, default: no limit); fewer layers
   *  go there (the first ones) until they fit, the rest run on the CPU. */
  gpuMemory?: number;
  /** 'auto' (default): the threaded build where SharedArrayBuffer is available (Node, or a
   *  crossOriginIsolated page), else the single-threaded one, reported in `model.engineNote`
   *  and through `onWarning`. */
  build?: 'auto' | 'mt' | 'st';
  /** 'auto' (default): the relaxed-SIMD build where the engine validates relaxed SIMD
   *  (Chromium and Node do: on Node 20/21 loadModel turns on V8's relaxed-SIMD flag for the
   *  process, js/main/features.js enableRelaxedSimd), else plain SIMD128. */
  simd?: 'auto' | 'relaxed' | 'simd128';
  onProgress?: (p: LoadProgress | DownloadProgress) => void;
  /** Keep URL sources in the model cache (OPFS / a Node directory): downloaded in the
   *  background, generation can start at once (with `sha256`: once it is verified),
   *  `model.download` says when the copy is done.
   *  See docs/deploy.md. */
  cache?: boolean | CacheOptions;
  /** Called with a sentence when the engine runs with less than was asked (e.g. one thread). */
  onWarning?: (message: string) => void;
  /** Aborting rejects with an OxError ABORTED and frees the worker. */
  signal?: AbortSignal;
  /** Where the engine's files (dist/: oxinfer-mt.js, .mjs, .wasm, .worker.js, oxinfer-st.js, .mjs, .wasm,
   *  and the same with -relaxed) are served, as a folder URL (relative: to the page). Default:
   *  dist/ beside the package's js/, found as `new URL('../../dist/...', import.meta.url)`, which
   *  bundlers (Vite, webpack 5) emit as assets. Another origin must allow CORS (and CORP under
   *  COEP). In Node: a file URL; the relaxed build loads where its files are there too, else the
   *  SIMD128 one. */
  assetBase?: string | URL;
  /** The URL of one engine file by name (as Emscripten's locateFile); wins over assetBase. */
  locateFile?: (name: string) => string | URL;
  /** Host-file table: LRU size for small reads (bytes, default 8 MiB), largest cached read
   *  (default 64 KiB), HTTP read timeout (ms, default 60000). */
  host?: { cacheBytes?: number; cacheMaxRead?: number; timeoutMs?: number };
  /** Check the memory the load and a full-context session take (estimateMemory) against a
   *  budget before allocating: bytes, 'auto' (defaultMemoryBudget()), or {bytes, fit}. Over
   *  it the load fails with NOMEM naming a context that fits; fit: 'context' lowers the
   *  context instead (info.context says which). Under a budget the whole need is taken at
   *  load (wasm memory grows once, the KV caches are allocated for the context) so nothing
   *  grows in the middle of a generation. Default: no budget, caches grow as used.
   *  When streamWeights is not given and even a context of 1 (or the asked one, without fit)
   *  is over the budget with every weight resident, the weights are streamed from the file
   *  ('experts', else 'all', with weightCache bytes) if that fits (info.streamWeights says
   *  which); the NOMEM then names what each mode would need. */
  memoryBudget?: number | 'auto' | { bytes?: number | 'auto'; fit?: 'context' | 'none' };
}

/** estimateMemory's options: the load options that change the sums, and the context. */
export interface EstimateOptions extends Pick<LoadOptions, 'quant' | 'kvType' | 'tablesOnHost' | 'streamWeights' | 'weightCache' | 'threads' | 'build' | 'simd' | 'assetBase' | 'locateFile' | 'host' | 'memoryBudget' | 'signal'> {
  /** Positions the session holds (default: the model's maximum). */
  context?: number;
  /** 'webgpu': as on the GPU backend (the matrices and KV caches on the device: `gpu`, and
   *  `weights` / `kv` count only what stays in wasm memory), where the model can run there;
   *  'auto': so where a hardware adapter exists; 'cpu' (default): as on the CPU. */
  backend?: 'auto' | 'webgpu' | 'cpu';
}

/** Bytes (context: positions) a load would take, from the files' headers. */
export interface MemoryEstimate {
  /** resident weights, as stored or as `quant` converts them */
  weights: number;
  /** tables read per token through the host (PLE): not resident, not in total */
  embeddingsOnHost: number;
  /** the bound of the streamed weights' cache (`streamWeights`; 0 when all is resident):
   *  streamed weights are not in `weights` */
  weightCache: number;
  /** KV caches holding `context` positions */
  kv: number;
  /** a prefill micro-batch's activations and matmul scratch, the token list, one generation */
  scratch: number;
  /** in use before the load: the wasm module, stacks, the parsed headers, the tokenizer */
  runtime: number;
  /** weights + weightCache + kv + scratch + runtime */
  total: number;
  /** what the load reads from the files */
  fileBytes: number;
  /** the context (with memoryBudget fit: 'context', the largest that fits) */
  context: number;
  /** the weights left in the file: streamWeights, or the mode a memoryBudget chose (as loadModel) */
  streamWeights: 'none' | 'experts' | 'all';
  /** where the estimate has the forward run ('webgpu' only where the model can run there whole) */
  backend: 'webgpu' | 'cpu';
  /** on the GPU: the device's bytes (weights as stored, f32 KV rows of every position of each
   *  own-KV layer, the step's buffers); a memoryBudget bounds total + these. null on the CPU */
  gpu: { weights: number; kv: number; scratch: number } | null;
}

export interface SamplingOptions {
  /** >= 0; 0 = greedy. Default 1. */
  temperature?: number;
  /** Integer >= 0; 0 = off, 1 = greedy. Default 64. */
  topK?: number;
  /** 1 = off. Default 0.95. */
  topP?: number;
  /** 0 = off. Default 0. */
  minP?: number;
  /** 1 = off. */
  repetitionPenalty?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** How many recent tokens (prompt included) the penalties look at: integer >= 0, 0 = all.
   *  Default 64. */
  penaltyWindow?: number;
  /** Integer 0..2^53-1. Same seed, same prompt, same options: same tokens. Default: random
   *  (reported in the stats). */
  seed?: number;
  /** token id -> added to its logit (-Infinity bans it). */
  logitBias?: Record<number, number> | Map<number, number>;
}

export interface GenerateOptions extends SamplingOptions {
  /** Integer >= 0 (0: prefill only, e.g. to warm the cache). Default 256. Generation also ends
   *  when the context is full (reason 'context'). */
  maxTokens?: number;
  /** Text that ends generation (not included in the output). */
  stop?: string | string[];
  /** Token ids that end generation; default: the checkpoint's (Gemma 4: [1, 106, 50]), and for
   *  chat() also <turn|>. */
  stopIds?: number[];
  /** Stream the text of control tokens (e.g. <|channel>) too. Default false. */
  includeSpecial?: boolean;
  /** Prompt tokens per forward call during prefill: integer >= 1 (default 256). An abort is
   *  seen between chunks. */
  prefillChunk?: number;
  /** Stops generation within one token: the iterator throws an OxError ABORTED at once, the
   *  model stays usable. Leaving a for-await loop early stops it too. */
  signal?: AbortSignal;
  /** A GBNF grammar the output must follow (docs/grammar.md); stop tokens are allowed only
   *  where the text is complete. */
  grammar?: string;
  /** Speculative decoding: drafts of up to draftTokens (1..16, default 8) from an n-gram match
   *  in the text so far ('prompt-lookup', the default) or from the MTP drafter loaded with
   *  loadModel's drafter option ('mtp'), verified in one batched forward. The output
   *  distribution is unchanged (greedy output is identical); off with a grammar or logprobs.
   *  Prompt lookup picks each draft's length by the tokens it expects per unit of verify cost
   *  (about 1 to 3 on 2 threads), from how many recent drafted tokens were kept. Default: on
   *  (prompt lookup, up to 3 drafts) for greedy requests (temperature 0 or topK 1) without a
   *  grammar or logprobs, where it changes only the speed; off otherwise. false: off. */
  speculative?: boolean | {
    method?: 'prompt-lookup' | 'mtp';
    draftTokens?: number;
    /** 'prompt-lookup': every draft draftTokens long where a match exists, not the length
     *  chosen by expected gain (for measuring what a verify of k tokens costs). */
    fixedLength?: boolean;
    /** 'mtp': a draft ends before a token the drafter gives less than this probability
     *  (0..1, default 0.3), so a drafter unsure of the text costs no wider verify. */
    minProbability?: number;
  };
  /** Each token's log-probability and this many (0..20) likeliest alternatives in the chunks. */
  logprobs?: number;
  /** Caller-made embeddings (a vision/audio encoder's soft tokens): every occurrence of the
   *  placeholder token in the prompt takes the next row (hidden floats each), with the pad
   *  token's per-layer embedding. */
  softTokens?: { token: number | string; embeddings: Float32Array };
  /** generate(): one image per `<|image|>` in the prompt, in order (a model with a vision
   *  tower: info.vision); each marker becomes `<|image>` + its soft tokens + `<image|>`, and
   *  the tower's rows go in at those positions. chat() takes its images from image content
   *  parts instead (docs/images.md). */
  images?: ImageInput[];
  /** Soft tokens per image at most: 70, 140, 280, 560 or 1120 (the processor's
   *  max_soft_tokens; default the model's, info.vision.defaultSoftTokens). */
  maxImageTokens?: 70 | 140 | 280 | 560 | 1120;
}

/** An image: a Blob / File, the bytes of a PNG / JPEG file, a URL (data:, http(s): or blob:,
 *  fetched by the page; in Node also a file path or file: URL), or a picture with a size: an
 *  ImageBitmap, ImageData (or RGBA {width, height, data}), an image element, a canvas or an
 *  OffscreenCanvas (written structurally, so the declarations need no DOM library). */
export type ImageInput =
  | Blob
  | ArrayBuffer
  | Uint8Array
  | URL
  | string
  | { readonly width: number; readonly height: number; readonly data?: Uint8Array | Uint8ClampedArray };

/** A content part: text, an image (Hugging Face's {type: 'image', image}, also with url or
 *  path), or OpenAI's {type: 'image_url', image_url: {url}}. */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; image?: ImageInput; url?: string; path?: string }
  | { type: 'image_url'; image_url: { url: string | Blob; detail?: string } | string }
  | string;

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'model';
  /** A string, or content parts, which a Jinja template sees as the array itself (as Hugging
   *  Face's apply_chat_template passes it; a bare string part becomes {type: 'text', text};
   *  an image part becomes {type: 'image'}, which Gemma 4's template writes as `<|image|>`);
   *  the built-in Gemma 4 format joins their text, an image as `<|image|>`. */
  content: string | ContentPart[];
  /** Other fields (tool_calls, ...) reach the template as they are. */
  [field: string]: unknown;
}

export interface ChatOptions extends GenerateOptions {
  /** Thinking mode: `<|think|>` in the system turn; the thought streams in the chunks'
   *  `thought` field (ChatChunk), never in `text`. */
  thinking?: boolean;
  /** Jinja source overriding the checkpoint's template (null: the built-in Gemma 4 format).
   *  Templates render in the engine worker, with bounded work (a hostile one fails FORMAT). */
  template?: string | null;
  /** Template variables add_generation_prompt (default true), bos_token, eos_token. */
  addGenerationPrompt?: boolean;
  bosToken?: string;
  eosToken?: string;
  tools?: unknown[];
  /** Extra variables for the template. */
  vars?: Record<string, unknown>;
}

export interface TokenChunk {
  /** The sampled token, or null for held-back text released at the end. */
  token: number | null;
  /** Text completed by this token ('' while a UTF-8 character or a possible stop string is
   *  incomplete). */
  text: string;
  /** Inside the thought channel (<|channel> ... <channel|>). */
  thinking: boolean;
  /** With logprobs: log p(token) under the model, and the likeliest alternatives. */
  logprob?: number;
  topLogprobs?: Array<{ token: number; text: string; logprob: number }>;
  stats?: undefined;
}

/** A chat() chunk: inside the thought channel `text` is '' and the thought's text (without
 *  the channel's name) is in `thought`; outside it `thought` is ''. */
export interface ChatChunk extends TokenChunk {
  thought: string;
}

export interface GenerationStats {
  reason: 'stop' | 'length' | 'context' | 'abort';
  /** The stop string that ended it, if one did. */
  stop?: string;
  promptTokens: number;
  /** Prompt tokens found in the KV cache already (not prefilled again). */
  reusedTokens: number;
  prefillTokens: number;
  generatedTokens: number;
  decodeSteps: number;
  prefillMs: number;
  decodeMs: number;
  prefillTokPerSec: number;
  decodeTokPerSec: number;
  seed: number;
  /** Tokens now in the KV cache. */
  contextTokens: number;
  /** Milliseconds from the generate()/chat() call to the first token (template, tokenizing,
   *  prefill and one step); null when no token came. */
  firstTokenMs: number | null;
  /** With speculative: tokens drafted, and how many of them were kept. */
  draftedTokens?: number;
  acceptedTokens?: number;
  /** With images: how many ran the vision tower, and how many took the rows it made for the
   *  same image earlier (docs/images.md "Images across turns"). */
  imagesEncoded?: number;
  imagesCached?: number;
}

/** The last item of a generation. */
export interface StatsChunk {
  token: null;
  text: '';
  stats: GenerationStats;
}

export interface ModelInfo {
  name: string;
  vocab: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  contextSize: number;
  slidingWindow: number;
  pleDim: number;
  experts: number;
  bos: number;
  pad: number;
  /** the checkpoint's stop ids (Gemma 4: [1, 106, 50]) */
  eosIds: number[];
  /** id of <turn|>, which chat() always stops at; -1 if the vocabulary has none */
  turnEnd: number;
  /** ids of <|channel> / <channel|>, -1 if the vocabulary has none */
  channelOpen: number;
  channelClose: number;
  /** 'stored', or the precision recorded by a pre-quantized safetensors file */
  quant: string;
  /** display names of the files, in load order */
  files: string[];
  /** with loadModel's drafter: the MTP drafter's files */
  drafter?: { files: string[] };
  /** the session's context: maxContext, the fitted one under memoryBudget, else contextSize */
  context: number;
  /** under memoryBudget: the estimate the load was checked against */
  memory?: MemoryEstimate;
  /** the weights left in the file (LoadOptions.streamWeights, or chosen under memoryBudget) */
  streamWeights: 'none' | 'experts' | 'all';
  /** where the forward runs (as Model.backend) */
  backend: 'webgpu' | 'cpu';
  /** on the GPU backend: the adapter's description, whether it is a software one, the optional
   *  features used, the largest storage binding, the first layers that run there (the rest
   *  and the head on the CPU when fewer than `layers`: LoadOptions.gpuLayers, gpuMemory) */
  gpu?: { adapter: string; fallbackAdapter: boolean; features: { f16: boolean; subgroups: boolean; dot4: boolean }; maxBinding: number; layers: number };
  /** why the model runs on the CPU although a GPU was asked for or lost, if it does */
  backendNote?: string;
  /** the vision tower's facts (docs/images.md); absent or null for a model that takes no images */
  vision?: VisionInfo | null;
}

export interface VisionInfo {
  /** pixels per patch side, and patches per pooled soft token side */
  patchSize: number;
  poolingKernel: number;
  /** soft tokens per image by default (maxImageTokens) */
  defaultSoftTokens: number;
  /** the tower's width and depth */
  hidden: number;
  layers: number;
  /** ids of <|image|> (the soft-token placeholder), <|image> and <image|> */
  imageTokenId: number;
  boiTokenId: number;
  eoiTokenId: number;
}

export interface ModelStats {
  /** weights + KV caches held in wasm memory */
  residentBytes: number;
  /** table rows read through the host after load, and how many rows */
  hostBytesRead: number;
  rowsFetched: number;
  /** every host read since start (load included) */
  hostReadCalls: number;
  hostBytesReadAll: number;
  /** streamed weights (LoadOptions.streamWeights): bytes read through the host since load, and
   *  the weight cache's hits and misses (fetches of a layer's matrix or an expert's block) */
  streamBytes: number;
  streamHits: number;
  streamMisses: number;
  /** wasm memory in use now: static data and stack, and what malloc holds (weights, caches,
   *  scratch, tokenizer, ...) */
  heapBytes: number;
  /** the wasm memory's size (as wasmMemoryBytes) */
  wasmBytes: number;
  wasmMemoryBytes: number;
  /** where the forward runs now ('cpu' after a lost device) */
  backend: 'webgpu' | 'cpu';
  /** bytes held on the GPU (0 on the CPU), and by what */
  gpuBytes: number;
  gpuMemory: { weights: number; kv: number; scratch: number } | null;
  contextTokens: number;
  /** the JS side of host reads: reads that reached the source, and LRU hits */
  hostCache: { reads: number; bytesRead: number; cacheHits: number; cacheBytesServed: number };
  /** the vision tower's rows kept for images seen again: entries and their bytes, the bound,
   *  images answered from it and images the tower ran for since the load (resetChat and unload
   *  empty it) */
  imageCache: { entries: number; bytes: number; maxBytes: number; hits: number; encodes: number };
}

/** A runtime LoRA adapter: a llama.cpp GGUF adapter, or PEFT's two files (any order). */
export interface LoraAdapter {
  source: ModelSource | [ModelSource, ModelSource];
  /** Multiplies the adapter's alpha / r (default 1; 0 turns it off). */
  scale?: number;
}

export interface Model {
  readonly info: ModelInfo;
  /** The checkpoint's chat template (Jinja), or null (the built-in Gemma 4 format is used). */
  readonly chatTemplate: string | null;
  /** 'mt' (SIMD + threads) or 'st' (SIMD, one thread). */
  readonly build: 'mt' | 'st';
  /** 'relaxed': the K-quant tiles use relaxed SIMD's dot product (chosen where the engine
   *  validates it, LoadOptions.simd); else 'simd128'. */
  readonly simd: 'relaxed' | 'simd128';
  readonly threads: number;
  /** Why the engine runs with less than asked (single-threaded fallback), or null. */
  readonly engineNote: string | null;
  /** 'webgpu' or 'cpu': where the forward runs; stats() refreshes it (a lost device moves the
   *  model to the CPU). */
  readonly backend: 'webgpu' | 'cpu';
  /** With `cache`: resolves when the cached copies are complete and verified (rejects with an
   *  OxError if the download fails); null without `cache`. */
  readonly download: Promise<void> | null;

  /** Text -> ids. special: match special tokens like `<bos>` in the text (default true);
   *  addBos: prepend BOS unless the text starts with it. */
  tokenize(text: string, opts?: { special?: boolean; addBos?: boolean }): Promise<number[]>;
  detokenize(ids: ArrayLike<number>, opts?: { skipSpecial?: boolean }): Promise<string>;
  /** The bytes the ids decode to (a token may end inside a UTF-8 character). */
  detokenizeBytes(ids: ArrayLike<number>, opts?: { skipSpecial?: boolean }): Promise<Uint8Array>;
  /** Streaming: push ids, get the text completed so far (split UTF-8 is held back). */
  detokenizer(opts?: { skipSpecial?: boolean }): { push(ids: ArrayLike<number>): Promise<string>; flush(): string };
  /** Logits after the last token (vocab floats), or after every token (n * vocab) with all. */
  logits(tokens: ArrayLike<number>, opts?: { all?: boolean }): Promise<Float32Array>;
  /** Text (tokenized in the worker, BOS added) or token ids. Reuses the KV cache for the
   *  prefix it shares with the previous call. */
  generate(prompt: string | ArrayLike<number>, opts?: GenerateOptions): AsyncIterableIterator<TokenChunk | StatsChunk>;
  /** Renders the conversation with the chat template and generates the model's turn, in one
   *  request to the worker; only the part not already in the KV cache is prefilled. */
  chat(messages: ChatMessage[], opts?: ChatOptions): AsyncIterableIterator<ChatChunk | StatsChunk>;
  /** The vision tower's soft-token rows for one image, as an image part puts them in a
   *  prompt (docs/images.md); height and width: the size it was resized to. */
  embedImage(image: ImageInput, opts?: { maxImageTokens?: 70 | 140 | 280 | 560 | 1120 }): Promise<{ embeddings: Float32Array; softTokens: number; height: number; width: number }>;
  /** The prompt text chat() would run. */
  renderChat(messages: ChatMessage[], opts?: ChatOptions): Promise<string>;
  /** Empty the KV cache. */
  resetChat(): Promise<boolean>;
  /** Attach LoRA adapters in place of the attached ones ([] detaches all), without reloading the
   *  base weights; the KV cache is emptied (docs/lora.md). */
  setLora(adapters: LoraAdapter[]): Promise<{ adapters: number; modules: number }>;
  stats(): Promise<ModelStats>;
  /** Embeddings (Float32Array of the hidden size each): the final-normed hidden states pooled
   *  (mean, last token or first token), unit length unless normalize is false; the checkpoint's
   *  bidirectional attention where its config asks for it. Run apart from the chat's KV cache. */
  embed(texts: string | ArrayLike<number> | Array<string | ArrayLike<number>>, opts?: { pooling?: 'mean' | 'last' | 'cls'; normalize?: boolean }): Promise<Float32Array[]>;
  /** GBNF for a JSON schema, to pass as the `grammar` option (the output is JSON valid under the
   *  schema), converted in the engine (docs/grammar.md: the subset, the limits). With
   *  `toolCalls`, `schema` is an array of OpenAI tools and the grammar is the rest of a forced
   *  Gemma 4 tool call after `<|tool_call>call:`. Outside the subset: OxError UNSUPPORTED naming
   *  the keyword or limit. */
  jsonSchemaGrammar(schema: object | boolean | Array<{ type?: 'function'; function: { name: string; parameters?: object } }>, opts?: { toolCalls?: boolean; afterName?: boolean; parallel?: boolean }): Promise<string>;
  /** OpenAI's Chat Completions (docs/openai.md): a `chat.completion`, or with `stream: true` an
   *  async iterable of `chat.completion.chunk` objects. */
  createChatCompletion(request: ChatCompletionRequest & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
  createChatCompletion(request: ChatCompletionRequest): Promise<ChatCompletion>;
  /** OpenAI's embeddings shape: {object: 'list', data: [{embedding, index}], usage}. */
  createEmbedding(request: { input: string | string[] | number[] | number[][]; model?: string; encoding_format?: 'float' | 'base64'; pooling?: 'mean' | 'last' | 'cls'; normalize?: boolean }): Promise<{ object: 'list'; data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>; model: string; usage: { prompt_tokens: number; total_tokens: number } }>;
  /** A fetch() serving POST /v1/chat/completions (SSE when streaming), POST /v1/embeddings and
   *  GET /v1/models from this model: `new OpenAI({ baseURL: 'http://local/v1', apiKey: 'x', fetch: model.fetch })`. */
  readonly fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** Free the model and end its worker. */
  unload(): Promise<void>;
  dispose(): Promise<void>;
}

/** Load a model (one GGUF, GGUF splits, or safetensors shards + config.json + tokenizer files)
 *  in a new worker. */
export function loadModel(sources: ModelSource | ModelSource[], opts?: LoadOptions): Promise<Model>;

/** The memory loadModel(sources, opts) would take, from the headers only (a URL: a few range
 *  reads). With memoryBudget: fails (NOMEM) or fits the context as loadModel would. */
export function estimateMemory(sources: ModelSource | ModelSource[], opts?: EstimateOptions): Promise<MemoryEstimate>;

/** The budget memoryBudget: 'auto' means here (Node: 4 GiB - 64 MiB; mobile browser: 1.5 GB;
 *  desktop tab: half of navigator.deviceMemory up to that, 2 GiB when unknown). */
export function defaultMemoryBudget(): number;

/** Which build and thread count loadModel would use here. */
export function chooseEngine(opts?: Pick<LoadOptions, 'build' | 'threads'>): Promise<{ build: 'mt' | 'st'; threads: number; note: string | null }>;

/** A Chat Completions request (OpenAI's fields; extras are this engine's). */
export interface ChatCompletionRequest {
  /** content parts: text, and images as {type: 'image_url', image_url: {url}} (a data: URL, a
   *  URL the page can fetch, or a Blob) */
  messages: Array<{ role: 'system' | 'developer' | 'user' | 'assistant' | 'tool'; content?: string | null | Array<{ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string | Blob; detail?: string } | string } | { type: 'image'; image: ImageInput }>;
    tool_calls?: Array<{ id?: string; type?: 'function'; function: { name: string; arguments: string | object } }>; tool_call_id?: string; name?: string; reasoning_content?: string }>;
  model?: string;
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: object } }>;
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };
  parallel_tool_calls?: boolean;
  response_format?: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; json_schema: { name?: string; schema: object; strict?: boolean } };
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string | string[];
  seed?: number;
  n?: 1;
  logprobs?: boolean;
  top_logprobs?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  logit_bias?: Record<string, number>;
  /** extras */
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  penalty_window?: number;
  thinking?: boolean;
  speculative?: GenerateOptions['speculative'];
  grammar?: string;
  signal?: AbortSignal;
  /** soft tokens per image at most (GenerateOptions.maxImageTokens) */
  max_image_tokens?: 70 | 140 | 280 | 560 | 1120;
}

export interface ChatCompletionMessage {
  role: 'assistant';
  content: string | null;
  reasoning_content?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: [{ index: 0; message: ChatCompletionMessage; logprobs: { content: Array<{ token: string; logprob: number; bytes: number[]; top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }> }> } | null; finish_reason: 'stop' | 'length' | 'tool_calls' }];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: 0; delta: { role?: 'assistant'; content?: string; reasoning_content?: string;
    tool_calls?: Array<{ index: number; id?: string; type?: 'function'; function: { name?: string; arguments: string } }> }; logprobs: object | null; finish_reason: 'stop' | 'length' | 'tool_calls' | null }>;
  usage?: ChatCompletion['usage'];
}
