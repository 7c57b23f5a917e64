// Send only the first 8 MiB of a weights file: its header is all sizeup reads.
// (A file, not an inline script: the UI's Content-Security-Policy allows scripts from its own origin only.)
document.getElementById("estimate-form").addEventListener("htmx:configRequest", function (e) {
  const f = document.getElementById("file").files[0];
  if (f) { e.detail.parameters["file"] = new File([f.slice(0, 8 * 1024 * 1024)], f.name); }
});
