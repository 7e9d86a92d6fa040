// agentnb's JupyterLab extension (JupyterLab 4 and Notebook 7): the body of a %%agent cell is a
// prompt, not Python, so its editor uses JupyterLab's Markdown mode ("is", "and", "not" are not
// keywords there); and a saved agentnb widget output shows its static copy where its kernel is
// gone (see "static copy" below).
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

  // ---------------------------------------------------------------------------------------
  // A saved agentnb output shows its static copy, never "model not found".
  //
  // agentnb's widget outputs (the fork bar, the fork editor, a live trace, an evaluation view)
  // carry a static copy of themselves as text/html in the same bundle, marked in the output's
  // metadata ("agentnb_static"). ipywidgets' renderer ignores it: reopened without the kernel
  // it writes "Error displaying widget: model not found", and with saved widget state it shows
  // controls that nothing answers. For marked outputs only, when the widget's model is missing
  // or not connected to a kernel, this shows the copy instead (through the notebook's own
  // text/html renderer, so an untrusted notebook's copy is sanitized as any HTML output is). An
  // update that changes only the copy (same widget) does not rebuild a live view.
  var WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
  var STATIC_KEY = "agentnb_static";

  function marked(model) {
    var meta = model && model.metadata;
    return !!(meta && meta[STATIC_KEY] && model.data && typeof model.data["text/html"] === "string");
  }

  function liveView(renderer) {
    var child = renderer.widgets && renderer.widgets[0];
    var view = child && child._view;
    return view && view.model && view.model.comm_live ? child : null;
  }

  async function showStatic(renderer, model, rendermime) {
    var html = rendermime.createRenderer("text/html");
    await html.renderModel(model);
    while (renderer.widgets.length) renderer.widgets[0].parent = null; // detached, not disposed
    renderer.node.textContent = "";
    renderer.removeClass("jupyter-widgets");
    renderer.addClass("anb-static-copy");
    renderer.addWidget(html);
    renderer.show();
  }

  // Every widget renderer of a notebook is wrapped from birth: its renderModel (which
  // JupyterLab calls for each output, for each display update, and ipywidgets again once
  // the widgets' state is restored) goes through this.
  function wrapRenderer(renderer, rendermime) {
    if (!renderer || renderer.__anbWrapped) return renderer;
    var original = renderer.renderModel;
    renderer.__anbWrapped = true;
    renderer.renderModel = async function (model) {
      if (!marked(model)) return original.call(renderer, model);
      var id = (model.data[WIDGET_MIME] || {}).model_id;
      if (renderer.__anbLive && renderer.__anbLive === id && liveView(renderer)) return; // only the copy changed
      renderer.__anbLive = null;
      renderer.removeClass("anb-static-copy");
      await original.call(renderer, model);
      if (liveView(renderer)) {
        renderer.__anbLive = id;
        return;
      }
      if (!renderer.widgets.length && renderer._rerenderMimeModel === model) return; // drawn again once restored
      await showStatic(renderer, model, rendermime);
    };
    return renderer;
  }

  function wrapFactory(factory, rendermime) {
    if (!factory || factory.__anbWrapped) return;
    var create = factory.createRenderer;
    factory.createRenderer = function (options) {
      return wrapRenderer(create.call(factory, options), rendermime);
    };
    factory.__anbWrapped = true;
  }

  // A notebook's rendermime registry gets ipywidgets' factory a moment after the notebook is
  // made (before its outputs are drawn): wrap it whenever it comes.
  function adopt(notebook) {
    var rendermime = notebook && notebook.rendermime;
    if (!rendermime || rendermime.__anbAdopted) return;
    rendermime.__anbAdopted = true;
    wrapFactory(rendermime.getFactory(WIDGET_MIME), rendermime);
    var add = rendermime.addFactory;
    rendermime.addFactory = function (factory, rank) {
      if (factory && factory.mimeTypes && factory.mimeTypes.indexOf(WIDGET_MIME) >= 0) wrapFactory(factory, rendermime);
      return add.call(rendermime, factory, rank);
    };
    // A notebook already drawn (open before this extension started): its marked outputs again.
    (notebook.widgets || []).forEach(function (cell) {
      var area = cell.outputArea;
      if (!area || !area.model) return;
      area.widgets.forEach(function (child, i) {
        var model = area.model.get(i);
        if (!marked(model)) return;
        Array.from(child.children ? child.children() : []).forEach(function (w) {
          if (typeof w.renderModel === "function" && "_rerenderMimeModel" in w && !liveView(w)) {
            wrapRenderer(w, rendermime).renderModel(model);
          }
        });
      });
    });
  }

  var staticCopy = {
    id: "agentnb:static-copy",
    description: "Show agentnb's static copy of a widget output whose kernel is gone, not 'model not found'.",
    autoStart: true,
    activate: function (app) {
      var take = function (widget) {
        if (widget && widget.content) adopt(widget.content);
      };
      if (app.docRegistry && app.docRegistry.addWidgetExtension) {
        app.docRegistry.addWidgetExtension("Notebook", { createNew: take });
      }
      var scan = function () {
        for (var w of app.shell.widgets("main")) take(w);
      };
      app.restored.then(scan);
      app.shell.currentChanged && app.shell.currentChanged.connect(scan);
    }
  };

  var root = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  root["agentnb"] = {
    init: function () {},
    get: function (module) {
      if (module !== "./extension") return Promise.reject(new Error("agentnb has no module " + module));
      return Promise.resolve(function () {
        return { __esModule: true, default: [plugin, staticCopy] };
      });
    }
  };
})();
