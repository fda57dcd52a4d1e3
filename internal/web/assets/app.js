// agentd web app. The pages are rendered by the server; this script sends the changes to the
// JSON API (the session cookie authenticates it, the CSRF token goes in a header), follows the
// live streams, and inserts the server's fragments. It writes no HTML of its own: text goes
// in with textContent, and the one HTML sink takes only fragments the server rendered, through
// the Trusted Types policy the page's CSP names.
"use strict";

(() => {
  const policy = window.trustedTypes
    ? window.trustedTypes.createPolicy("agentd", { createHTML: (s) => s })
    : { createHTML: (s) => s };

  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  // fragment parses server-rendered HTML into nodes.
  function fragment(html) {
    const t = document.createElement("template");
    t.innerHTML = policy.createHTML(html);
    return t.content;
  }

  // ApiError carries the API's explanation of a refusal.
  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  // detailText turns an API error body into a sentence.
  function detailText(body, status) {
    if (body && typeof body.detail === "string") return body.detail;
    if (body && Array.isArray(body.detail)) {
      return body.detail
        .map((p) => {
          const loc = (p.loc || []).filter((x) => x !== "body" && x !== "query").join(".");
          return (loc ? loc + ": " : "") + (p.msg || "invalid");
        })
        .join("\n");
    }
    return "The server answered " + status + ".";
  }

  // api calls the JSON API as the signed-in user.
  async function api(method, path, body) {
    const headers = { "X-CSRF-Token": csrf(), Accept: "application/json" };
    const init = { method, headers, credentials: "same-origin" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, "The server could not be reached.");
    }
    const text = await resp.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (e) {
      data = null;
    }
    if (resp.status === 401 && !(await signedIn())) {
      location.assign("/sign-in?next=" + encodeURIComponent(location.pathname + location.search));
      throw new ApiError(401, "Sign in again.");
    }
    if (!resp.ok) throw new ApiError(resp.status, detailText(data, resp.status));
    return data;
  }

  // signedIn reports whether the session still holds: a 401 may also be a git provider
  // refusing a token.
  async function signedIn() {
    try {
      const r = await fetch("/api/v1/users/me", { credentials: "same-origin", headers: { Accept: "application/json" } });
      return r.status !== 401;
    } catch (e) {
      return true;
    }
  }

  // load fetches a fragment of the app.
  async function load(path) {
    const resp = await fetch(path, { credentials: "same-origin", headers: { "X-Requested-With": "agentd" } });
    const text = await resp.text();
    if (resp.status === 401) {
      location.assign("/sign-in?next=" + encodeURIComponent(location.pathname));
    }
    if (!resp.ok) throw new ApiError(resp.status, text || "The server answered " + resp.status + ".");
    return text;
  }

  let toastTimer;
  function toast(msg, isError) {
    const t = $("#toast");
    if (!t) return;
    t.textContent = msg;
    t.classList.toggle("error", !!isError);
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => (t.hidden = true), isError ? 8000 : 3000);
  }

  function showError(form, msg) {
    const box = form && $(".alert.error", form);
    if (box) {
      box.textContent = msg;
      box.hidden = !msg;
      if (msg) box.focus && box.setAttribute("tabindex", "-1");
    } else if (msg) toast(msg, true);
  }

  // busy disables a control while its request runs.
  async function busy(el, fn) {
    if (el) el.disabled = true;
    try {
      return await fn();
    } finally {
      if (el) el.disabled = false;
    }
  }

  function then(where) {
    if (!where) return;
    if (where === "reload") location.reload();
    else location.assign(where);
  }

  // Buttons that call the API: data-call="METHOD /path".
  document.addEventListener("click", async (ev) => {
    const el = ev.target.closest("[data-call]");
    if (!el) return;
    ev.preventDefault();
    if (el.dataset.confirm && !confirm(el.dataset.confirm)) return;
    const [method, path] = el.dataset.call.split(" ");
    try {
      await busy(el, () => api(method, path));
      if (el.dataset.then) then(el.dataset.then);
      else toast("Done.");
    } catch (e) {
      toast(e.message, true);
    }
  });

  // Deleting a conversation.
  document.addEventListener("click", async (ev) => {
    const el = ev.target.closest("[data-delete-conversation]");
    if (!el) return;
    ev.preventDefault();
    const title = el.dataset.title || "this conversation";
    if (!confirm("Delete “" + title + "”, its events and its sandbox?")) return;
    try {
      await busy(el, () => api("DELETE", "/api/v1/app-conversations/" + encodeURIComponent(el.dataset.deleteConversation)));
      if (el.dataset.then) return then(el.dataset.then);
      const row = el.closest(".conv-row");
      if (row) row.remove();
      toast("Deleted.");
    } catch (e) {
      toast(e.message, true);
    }
  });

  // Forms, each with its own body.
  const forms = {};
  document.addEventListener("submit", async (ev) => {
    const form = ev.target;
    const handler = forms[form.dataset.form];
    if (!handler) return;
    ev.preventDefault();
    showError(form, "");
    const button = $('button[type="submit"]', form);
    try {
      await busy(button, () => handler(form, new FormData(form)));
    } catch (e) {
      showError(form, e.message);
    }
  });

  const str = (v) => (typeof v === "string" ? v.trim() : "");

  forms["llm"] = async (form, fd) => {
    const body = { llm_model: str(fd.get("llm_model")), llm_base_url: str(fd.get("llm_base_url")) };
    const key = str(fd.get("llm_api_key"));
    if (key) body.llm_api_key = key;
    await api("POST", "/api/settings", body);
    location.reload();
  };

  forms["provider"] = async (form, fd) => {
    const provider = fd.get("provider");
    const token = { token: str(fd.get("token")) };
    if (str(fd.get("host"))) token.host = str(fd.get("host"));
    await api("POST", "/api/add-git-providers", { provider_tokens: { [provider]: token } });
    location.reload();
  };

  forms["secret"] = async (form, fd) => {
    const body = { name: str(fd.get("name")), value: fd.get("value") || "" };
    if (str(fd.get("description"))) body.description = str(fd.get("description"));
    await api("POST", "/api/v1/secrets", body);
    location.reload();
  };

  function showKey(key) {
    const d = $("#key-dialog");
    $("#key-value", d).value = key;
    d.showModal();
    $("#key-value", d).select();
    d.addEventListener("close", () => location.reload(), { once: true });
  }

  forms["create-key"] = async (form, fd) => {
    const body = { name: str(fd.get("name")) };
    if (str(fd.get("expires_at"))) body.expires_at = new Date(fd.get("expires_at") + "T23:59:59").toISOString();
    const k = await api("POST", "/api/keys", body);
    form.reset();
    showKey(k.key);
  };

  forms["create-user"] = async (form, fd) => {
    await api("POST", "/api/v1/users", { name: str(fd.get("name")), is_admin: fd.get("is_admin") === "on" });
    location.reload();
  };

  document.addEventListener("click", async (ev) => {
    const el = ev.target.closest("[data-new-key-for]");
    if (!el) return;
    try {
      const k = await busy(el, () =>
        api("POST", "/api/keys", { name: "key of " + el.dataset.userName, user_id: el.dataset.newKeyFor }),
      );
      showKey(k.key);
    } catch (e) {
      toast(e.message, true);
    }
  });

  document.addEventListener("click", (ev) => {
    const copy = ev.target.closest("[data-copy]");
    if (copy) {
      const input = document.getElementById(copy.dataset.copy);
      input.select();
      (navigator.clipboard ? navigator.clipboard.writeText(input.value) : Promise.reject())
        .then(() => toast("Copied."))
        .catch(() => toast("Press Ctrl+C to copy."));
    }
    const close = ev.target.closest("[data-close-dialog]");
    if (close) close.closest("dialog").close();
  });

  // A provider's verdict on a stored token: the account it opens.
  document.addEventListener("click", async (ev) => {
    const el = ev.target.closest("[data-check-provider]");
    if (!el) return;
    const p = el.dataset.checkProvider;
    const out = document.getElementById("verdict-" + p);
    out.textContent = "Asking…";
    try {
      const info = await busy(el, () => api("GET", "/api/v1/users/git-info?provider=" + encodeURIComponent(p)));
      out.textContent = "Accepted: signed in as " + (info.login || info.name || info.id);
      out.className = "verdict small plus";
    } catch (e) {
      out.textContent = "Refused: " + e.message;
      out.className = "verdict small minus";
    }
  });

  // MCP servers: the configuration read from the page, changed and sent back whole (keys the
  // page never had stay stored: the server keeps them for servers sent without one).
  function mcpConfig() {
    const list = $("#mcp-list");
    const cfg = JSON.parse(list.dataset.mcp || "{}");
    for (const k of ["sse_servers", "stdio_servers", "shttp_servers"]) cfg[k] = cfg[k] || [];
    return cfg;
  }
  forms["mcp"] = async (form, fd) => {
    const cfg = mcpConfig();
    const kind = fd.get("kind");
    if (kind === "stdio_servers") {
      const parts = str(fd.get("command")).split(/\s+/).filter(Boolean);
      if (!str(fd.get("name")) || parts.length === 0) throw new Error("A stdio server needs a name and a command.");
      cfg.stdio_servers.push({ name: str(fd.get("name")), command: parts[0], args: parts.slice(1), env: {} });
    } else {
      if (!str(fd.get("url"))) throw new Error("This kind of server needs a URL.");
      const s = { url: str(fd.get("url")) };
      if (str(fd.get("api_key"))) s.api_key = str(fd.get("api_key"));
      cfg[kind].push(s);
    }
    await api("POST", "/api/settings", { mcp_config: cfg });
    location.reload();
  };
  document.addEventListener("click", async (ev) => {
    const el = ev.target.closest("[data-mcp-remove]");
    if (!el) return;
    const [kind, i] = el.dataset.mcpRemove.split(":");
    const cfg = mcpConfig();
    cfg[kind].splice(Number(i), 1);
    try {
      await busy(el, () => api("POST", "/api/settings", { mcp_config: cfg }));
      location.reload();
    } catch (e) {
      toast(e.message, true);
    }
  });

  // ----- A new conversation -----

  function readImage(file) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(r.result);
      r.onerror = () => reject(new Error("The image " + file.name + " could not be read."));
      r.readAsDataURL(file);
    });
  }

  forms["new-conversation"] = async (form, fd) => {
    const text = str(fd.get("message"));
    const suggested = str(fd.get("suggested_task"));
    const files = Array.from(form.querySelector("#images").files || []);
    if (!text && !suggested && files.length === 0) throw new Error("Tell the agent what to do.");
    const content = [];
    if (text) content.push({ type: "text", text });
    if (files.length) content.push({ type: "image", image_urls: await Promise.all(files.map(readImage)) });
    const id = crypto.randomUUID().replaceAll("-", "");
    const body = { conversation_id: id, initial_message: { content, run: true } };
    // The first line of the message names the conversation until the user renames it.
    const first = text.split("\n").find((l) => l.trim()) || "";
    if (first) body.title = first.trim().replace(/^#+\s*/, "").slice(0, 80);
    const repo = str(fd.get("repository"));
    if (repo) {
      body.selected_repository = repo;
      body.git_provider = fd.get("git_provider");
      if (str(fd.get("branch"))) body.selected_branch = str(fd.get("branch"));
    }
    if (str(fd.get("llm_model"))) body.llm_model = str(fd.get("llm_model"));
    if (suggested) body.suggested_task = JSON.parse(suggested);
    await api("POST", "/api/v1/app-conversations", body);
    location.assign("/conversations/" + id);
  };

  function fillDatalist(list, values) {
    list.replaceChildren(
      ...values.map((v) => {
        const o = document.createElement("option");
        o.value = v;
        return o;
      }),
    );
  }

  function debounce(fn, ms) {
    let t;
    return (...args) => {
      clearTimeout(t);
      t = setTimeout(() => fn(...args), ms);
    };
  }

  function setupModels() {
    const list = $("#model-options");
    if (!list) return;
    api("GET", "/api/options/models")
      .then((models) => fillDatalist(list, models || []))
      .catch(() => {});
  }

  function setupNewConversation() {
    const form = $("#new-conversation");
    if (!form) return;
    const images = $("#images", form);
    images.addEventListener("change", async () => {
      const out = $("#image-previews");
      out.replaceChildren();
      for (const f of images.files) {
        try {
          const li = document.createElement("li");
          const img = document.createElement("img");
          img.alt = f.name;
          img.src = await readImage(f);
          li.append(img);
          out.append(li);
        } catch (e) {
          toast(e.message, true);
        }
      }
    });
    const provider = $("#git_provider", form);
    const repo = $("#repository", form);
    const branch = $("#branch", form);
    if (provider && repo) {
      const loadRepos = debounce(async () => {
        const q = new URLSearchParams({ provider: provider.value, limit: "30" });
        if (repo.value.trim()) q.set("query", repo.value.trim());
        try {
          const page = await api("GET", "/api/v1/git/repositories/search?" + q);
          fillDatalist($("#repository-options"), page.items.map((r) => r.full_name));
        } catch (e) {
          /* the repository can still be typed */
        }
      }, 250);
      const loadBranches = debounce(async () => {
        if (!repo.value.trim()) return;
        const q = new URLSearchParams({ provider: provider.value, repository: repo.value.trim(), limit: "50" });
        try {
          const page = await api("GET", "/api/v1/git/branches/search?" + q);
          fillDatalist($("#branch-options"), page.items.map((b) => b.name));
        } catch (e) {
          fillDatalist($("#branch-options"), []);
        }
      }, 250);
      provider.addEventListener("change", loadRepos);
      repo.addEventListener("input", loadRepos);
      repo.addEventListener("change", loadBranches);
      branch.addEventListener("focus", loadBranches);
      loadRepos();
      loadSuggested(form, provider, repo);
    }
  }

  async function loadSuggested(form, provider, repo) {
    const list = $("#suggested-tasks");
    const status = $("#suggested-status");
    try {
      const page = await api("GET", "/api/v1/git/suggested-tasks/search?limit=20");
      if (!page.items.length) {
        status.textContent = "Nothing needs you right now.";
        return;
      }
      status.textContent = "Pick one to have the agent work on it:";
      for (const t of page.items) {
        const li = document.createElement("li");
        const b = document.createElement("button");
        b.type = "button";
        b.setAttribute("aria-pressed", "false");
        const label = t.task_type === "OPEN_ISSUE" ? "Issue" : "Pull request";
        b.textContent = label + " " + t.repo + "#" + t.issue_number + ": " + t.title;
        b.addEventListener("click", () => {
          const on = b.getAttribute("aria-pressed") !== "true";
          $$("button", list).forEach((x) => x.setAttribute("aria-pressed", "false"));
          b.setAttribute("aria-pressed", on ? "true" : "false");
          $("#suggested_task", form).value = on
            ? JSON.stringify({ git_provider: t.git_provider, task_type: t.task_type, repo: t.repo, issue_number: t.issue_number, title: t.title })
            : "";
          if (on) {
            provider.value = t.git_provider;
            repo.value = t.repo;
          }
        });
        li.append(b);
        list.append(li);
      }
    } catch (e) {
      status.textContent = "Suggested tasks could not be read: " + e.message;
    }
  }

  // ----- A conversation -----

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  }

  // replaceStatus puts a new status line in, keeping what the user is typing in it (the
  // reason of a rejection) and where the focus is.
  // streamStatuses counts the status lines the live stream brought.
  let streamStatuses = 0;

  function replaceStatus(html) {
    const st = $("#status");
    if (!st) return;
    const reason = $("#reject-reason");
    const typed = reason ? reason.value : "";
    const focused = document.activeElement && st.contains(document.activeElement) ? document.activeElement : null;
    const key = focused && (focused.id || focused.dataset.action);
    st.replaceChildren(fragment(html));
    const again = $("#reject-reason");
    if (again && typed) again.value = typed;
    if (key) {
      const el = document.getElementById(key) || $('[data-action="' + CSS.escape(key) + '"]', st);
      if (el) el.focus();
    }
  }

  // apply puts one message of the live stream into the page.
  function apply(msg) {
    const stick = nearBottom();
    if (msg.op === "status") {
      streamStatuses++;
      replaceStatus(msg.html);
      return;
    }
    if (msg.op === "title") {
      const t = $("#conv-title");
      if (t) t.textContent = msg.text;
      return;
    }
    if (msg.op === "result") {
      let slot = msg.target ? document.getElementById(msg.target) : null;
      if (!slot && msg.call) {
        const acts = $$('[data-call="' + CSS.escape(msg.call) + '"]');
        const act = acts[acts.length - 1];
        slot = act && $(".result-slot", act);
      }
      if (slot) {
        slot.replaceChildren(fragment(msg.html));
        const act = slot.closest(".act");
        if (act) {
          act.classList.remove("pending");
          if (msg.error) act.classList.add("failed");
        }
        if (stick) window.scrollTo(0, document.body.scrollHeight);
        return;
      }
      msg.html = msg.orphan;
    }
    if (msg.op === "append" || msg.op === "result") {
      $("#events").append(fragment(msg.html));
      if (stick) window.scrollTo(0, document.body.scrollHeight);
    }
  }

  // follow keeps the page on its conversation's stream. EventSource reconnects by itself
  // after a dropped connection, sending the last event's id; when a server answers with an
  // error instead (one that restarts, a proxy in between), the page opens a new stream after
  // the last event it has, waiting a little longer each time.
  function follow(conv) {
    const state = $("#stream-state");
    let after = conv.dataset.after || "";
    let es = null;
    let wait = 500;
    let ended = false;
    const open = () => {
      es = new EventSource(conv.dataset.stream + (after ? "?after=" + encodeURIComponent(after) : ""));
      es.onopen = () => {
        state.textContent = "";
        wait = 500;
      };
      es.onmessage = (ev) => {
        if (ev.lastEventId) after = ev.lastEventId;
        let msg;
        try {
          msg = JSON.parse(ev.data);
        } catch (e) {
          return;
        }
        apply(msg);
      };
      es.addEventListener("end", (ev) => {
        ended = true;
        state.textContent = ev.data || "This conversation was deleted.";
        es.close();
      });
      es.onerror = () => {
        if (ended) return;
        state.textContent = "Reconnecting…";
        if (es.readyState !== EventSource.CLOSED) return; // the browser retries
        es.close();
        setTimeout(async () => {
          try {
            await load("/conversations/" + conv.dataset.id + "/status"); // signed out: to the sign-in page
          } catch (e) {
            if (e.status === 404) {
              state.textContent = "This conversation was deleted.";
              return;
            }
          }
          open();
        }, wait);
        wait = Math.min(wait * 2, 10000);
      };
    };
    open();
    window.addEventListener("pagehide", () => es && es.close());
  }

  // refreshStatus shows the status line at once after a button's call. A status line the
  // stream brought while this one was on its way may be newer (a pause the agent reached
  // meanwhile), so this one then gives way: the stream brings every later change anyway.
  async function refreshStatus(conv) {
    const seen = streamStatuses;
    try {
      const html = await load("/conversations/" + conv.dataset.id + "/status");
      if (streamStatuses === seen) replaceStatus(html);
    } catch (e) {
      /* the stream brings it */
    }
  }

  function setupConversation() {
    const conv = $("#conversation");
    if (!conv) return;
    window.scrollTo(0, document.body.scrollHeight);
    follow(conv);
    const id = conv.dataset.id;
    const agentPath = (sb) => "/agent-server/" + encodeURIComponent(sb) + "/api/conversations/" + encodeURIComponent(id);

    // The status line's buttons.
    conv.addEventListener("click", async (ev) => {
      const el = ev.target.closest("[data-action]");
      if (!el) return;
      const sb = el.dataset.sandbox;
      const calls = {
        pause: () => api("POST", agentPath(sb) + "/pause"),
        stop: () => api("POST", "/api/v1/sandboxes/" + encodeURIComponent(sb) + "/pause"),
        resume: () =>
          el.dataset.resume === "sandbox"
            ? api("POST", "/api/v1/sandboxes/" + encodeURIComponent(sb) + "/resume")
            : api("POST", agentPath(sb) + "/run"),
        accept: () => api("POST", agentPath(sb) + "/events/respond_to_confirmation", { accept: true, reason: "" }),
        reject: () =>
          api("POST", agentPath(sb) + "/events/respond_to_confirmation", {
            accept: false,
            reason: ($("#reject-reason") || {}).value || "Rejected by the user",
          }),
      };
      try {
        await busy(el, calls[el.dataset.action]);
        await refreshStatus(conv);
      } catch (e) {
        toast(e.message, true);
      }
    });

    // Sending a message; Ctrl+Enter sends too.
    const composer = $("#composer");
    const text = $("#composer-text");
    text.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        composer.requestSubmit();
      }
    });
    forms["send-message"] = async (form, fd) => {
      const msg = str(fd.get("message"));
      if (!msg) throw new Error("Write a message first.");
      await api("POST", "/api/v1/app-conversations/" + encodeURIComponent(id) + "/send-message", {
        content: [{ type: "text", text: msg }],
        run: true,
      });
      form.reset();
      text.focus();
    };

    // Tabs: arrow keys move between them, as tabs do.
    const tabs = $$('[role="tab"]', conv);
    function select(tab) {
      for (const t of tabs) {
        const on = t === tab;
        t.setAttribute("aria-selected", on ? "true" : "false");
        t.tabIndex = on ? 0 : -1;
        document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
      }
      $("#composer").hidden = tab.id !== "tab-activity";
      if (tab.dataset.load) {
        const panel = document.getElementById(tab.getAttribute("aria-controls"));
        load(tab.dataset.load)
          .then((html) => panel.replaceChildren(fragment(html)))
          .catch((e) => {
            const p = document.createElement("p");
            p.className = "alert error";
            p.textContent = e.message;
            panel.replaceChildren(p);
          });
      }
    }
    tabs.forEach((t, i) => {
      t.addEventListener("click", () => select(t));
      t.addEventListener("keydown", (ev) => {
        const d = { ArrowRight: 1, ArrowLeft: -1 }[ev.key];
        if (!d) return;
        const next = tabs[(i + d + tabs.length) % tabs.length];
        next.focus();
        select(next);
      });
    });

    // A changed file's diff, under its name.
    conv.addEventListener("click", async (ev) => {
      const el = ev.target.closest("[data-diff]");
      if (!el) return;
      const slot = el.nextElementSibling;
      if (el.getAttribute("aria-expanded") === "true") {
        el.setAttribute("aria-expanded", "false");
        slot.replaceChildren();
        return;
      }
      try {
        const html = await busy(el, () => load(el.dataset.diff));
        slot.replaceChildren(fragment(html));
        el.setAttribute("aria-expanded", "true");
      } catch (e) {
        toast(e.message, true);
      }
    });
  }

  // ----- The conversation list: rows follow their conversations -----

  function setupList() {
    const list = $("#conv-list");
    if (!list || !list.dataset.live) return;
    const es = new EventSource(list.dataset.live);
    es.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        return;
      }
      const row = document.getElementById(msg.target);
      if (row && msg.html) row.replaceWith(fragment(msg.html));
      if (row && msg.op === "gone") row.remove();
    };
    window.addEventListener("pagehide", () => es.close());
  }

  document.addEventListener("DOMContentLoaded", () => {
    setupModels();
    setupNewConversation();
    setupConversation();
    setupList();
  });
})();
