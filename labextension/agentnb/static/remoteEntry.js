// agentnb's JupyterLab extension: the body of a %%agent cell is a prompt, not Python, so its
// editor uses JupyterLab's Markdown mode ("is", "and", "not" are not keywords there).
//
// Written by hand as a minimal federated-extension container (the interface JupyterLab 4's
// loader calls: init(shareScope), get("./extension") -> factory -> module with the plugin).
// It uses no shared packages: it finds notebooks through the application shell.
(function () {
  "use strict";
  var MAGIC = /^\s*%%agent\b/;
  var PROMPT_MIME = "text/x-ipythongfm";

  function sync(notebook) {
    var fallback = notebook.codeMimetype;
    var changed = false;
    notebook.widgets.forEach(function (cell) {
      var model = cell.model;
      if (!model || model.type !== "code") return;
      var want = MAGIC.test(model.sharedModel.getSource()) ? PROMPT_MIME : fallback;
      if (model.mimeType !== want) {
        model.mimeType = want;
        changed = changed || want === PROMPT_MIME;
      }
    });
    // Languages load asynchronously and the last load to finish wins: when the Python mode was
    // still loading, it could land after ours. Once both are loaded, apply ours again.
    if (changed) setTimeout(function () { settle(notebook); }, 1000);
  }

  function settle(notebook) {
    notebook.widgets.forEach(function (cell) {
      var model = cell.model;
      if (model && model.type === "code" && model.mimeType === PROMPT_MIME) {
        model.mimeType = "text/plain";
        model.mimeType = PROMPT_MIME;
      }
    });
  }

  function watch(widget, seen) {
    var notebook = widget && widget.content;
    if (!notebook || !notebook.model || !notebook.widgets || seen.has(widget)) return;
    seen.add(widget);
    var again = function () { sync(notebook); };
    notebook.model.contentChanged.connect(again);
    // The notebook resets every code cell's mode when the kernel's language info arrives.
    notebook.model.metadataChanged && notebook.model.metadataChanged.connect(function () { setTimeout(again, 0); });
    notebook.modelChanged && notebook.modelChanged.connect(again);
    if (widget.sessionContext) {
      widget.sessionContext.kernelChanged.connect(function () { setTimeout(again, 0); });
      widget.sessionContext.ready.then(function () { setTimeout(again, 0); });
    }
    widget.context && widget.context.ready.then(again);
    widget.disposed.connect(function () { seen.delete(widget); });
    again();
  }

  var plugin = {
    id: "agentnb:cell-magic-mode",
    description: "Highlight %%agent cells as Markdown (a prompt), not as Python.",
    autoStart: true,
    activate: function (app) {
      var seen = new Set();
      var scan = function () {
        for (var w of app.shell.widgets("main")) watch(w, seen);
      };
      app.restored.then(scan);
      app.shell.layoutModified && app.shell.layoutModified.connect(scan);
      app.shell.currentChanged && app.shell.currentChanged.connect(scan);
    }
  };

  var root = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  root["agentnb"] = {
    init: function () {},
    get: function (module) {
      if (module !== "./extension") return Promise.reject(new Error("agentnb has no module " + module));
      return Promise.resolve(function () {
        return { __esModule: true, default: [plugin] };
      });
    }
  };
})();
