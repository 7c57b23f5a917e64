// The UI's one script (a file, not inline: the Content-Security-Policy allows scripts from this origin only).
(function () {
  "use strict";

  // Power-of-two sliders beside a number field: the slider moves the number, typing moves the slider.
  function syncSliders(root) {
    root.querySelectorAll("input.log2[data-for]").forEach(function (slider) {
      const box = document.getElementById(slider.dataset.for);
      if (!box || slider.dataset.bound) return;
      slider.dataset.bound = "1";
      slider.addEventListener("input", function () { box.value = String(Math.pow(2, Number(slider.value))); });
      box.addEventListener("input", function () {
        const v = Number(box.value);
        if (v > 0) slider.value = String(Math.round(Math.log2(v)));
      });
    });
  }

  // "What would fit": one click sets the changed fields in the page's form and asks again (an uploaded file
  // stays in its field); without a form the link itself opens the changed page.
  function setField(form, name, value) {
    let field = form.elements.namedItem(name);
    if (!field) {
      field = document.createElement("input");
      field.type = "hidden"; field.name = name; form.appendChild(field);
    }
    if (field.tagName === "SELECT" && !Array.from(field.options).some(function (o) { return o.value === value; })) {
      const option = document.createElement("option");
      option.value = value; option.textContent = value; field.insertBefore(option, field.firstChild);
    }
    field.value = value;
    const slider = form.querySelector('input.log2[data-for="' + field.id + '"]');
    if (slider && Number(value) > 0) slider.value = String(Math.round(Math.log2(Number(value))));
  }

  document.addEventListener("click", function (e) {
    const link = e.target.closest("a.apply[data-set]");
    const form = document.querySelector("form.controls");
    if (!link || !form || !window.htmx) return;
    e.preventDefault();
    const changes = JSON.parse(link.dataset.set);
    Object.keys(changes).forEach(function (name) { setField(form, name, String(changes[name])); });
    htmx.trigger(form, "submit");
  });

  // A .gguf file larger than 8 MiB: its first 8 MiB go up (the header: metadata and tensor descriptors) with its
  // whole size as file_bytes, so the server reads it as the head of that file, not as a truncated one. Other
  // files go whole (the server refuses one over its cap in one line).
  const HEAD_BYTES = 8 * 1024 * 1024;
  document.addEventListener("htmx:configRequest", function (e) {
    const input = e.detail.elt.querySelector && e.detail.elt.querySelector('input[type=file][accept*=".gguf"]');
    const file = input && input.files[0];
    if (file && file.size > HEAD_BYTES && file.name.toLowerCase().endsWith(".gguf")) {
      e.detail.parameters["file"] = new File([file.slice(0, HEAD_BYTES)], file.name);
      e.detail.parameters["file_bytes"] = String(file.size);
    }
  });

  // The zoo model's usual input, filled in when another model is picked.
  document.addEventListener("change", function (e) {
    if (e.target.id !== "zoo") return;
    const input = document.getElementById("input");
    const option = e.target.selectedOptions[0];
    if (input && option) input.value = option.dataset.input || "";
  }, true);

  // A refused request (4xx, 5xx) shows its one-line message where the result goes.
  document.addEventListener("htmx:responseError", function (e) {
    const target = e.detail.target;
    if (!target) return;
    const p = document.createElement("p");
    p.className = "error"; p.id = "error"; p.setAttribute("role", "alert");
    p.textContent = (e.detail.xhr.responseText || "the request failed").slice(0, 400);
    target.replaceChildren(p);
  });

  // A form whose fields depend on a task (the plan form's <label data-tasks="chat api">): only the chosen task's
  // fields show, and the others are disabled, so they are not sent (the server refuses a field a task does not read).
  function showTaskFields(select) {
    const form = select.form;
    if (!form) return;
    form.querySelectorAll("label[data-tasks]").forEach(function (label) {
      const on = label.dataset.tasks.split(" ").indexOf(select.value) >= 0;
      label.hidden = !on;
      label.querySelectorAll("input, select, textarea").forEach(function (field) { field.disabled = !on; });
    });
  }
  document.addEventListener("change", function (e) {
    if (e.target.id === "plan-task") showTaskFields(e.target);
  });

  document.addEventListener("DOMContentLoaded", function () {
    syncSliders(document);
    const task = document.getElementById("plan-task");
    if (task) showTaskFields(task);
  });
  document.addEventListener("htmx:afterSettle", function (e) { syncSliders(e.detail.elt || document); });
})();
