// A .gguf file larger than 8 MiB: send its first 8 MiB (the header: metadata and tensor descriptors) and its whole
// size as file_bytes, so the server reads it as the head of that file and not as a truncated one. Other files go
// whole (the server refuses one over 8 MiB in one line).
// (A file, not an inline script: the UI's Content-Security-Policy allows scripts from its own origin only.)
const HEAD_BYTES = 8 * 1024 * 1024;
document.getElementById("estimate-form").addEventListener("htmx:configRequest", function (e) {
  const f = document.getElementById("file").files[0];
  if (f && f.size > HEAD_BYTES && f.name.toLowerCase().endsWith(".gguf")) {
    e.detail.parameters["file"] = new File([f.slice(0, HEAD_BYTES)], f.name);
    e.detail.parameters["file_bytes"] = String(f.size);
  }
});
