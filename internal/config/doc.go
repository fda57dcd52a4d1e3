package config

import (
	"fmt"
	"strings"
)

// Markdown renders docs/configuration.md from the option table, so the documentation cannot
// drift from the code (a test compares them).
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Configuration

` + "`agentd serve`" + ` reads its settings from, in order of precedence: command-line flags, the
environment, a TOML config file, and built-in defaults. The config file is named by ` + "`--config`" + `
or ` + "`AGENTD_CONFIG`" + `; unknown keys in it are an error, so a typo never goes unnoticed.

| Flag | Environment | Config file key | Default | Meaning |
|---|---|---|---|---|
`)
	for _, o := range Options() {
		def := o.Default
		if def == "" {
			def = "(none)"
		}
		envs := make([]string, len(o.Env))
		for i, e := range o.Env {
			envs[i] = "`" + e + "`"
		}
		secret := ""
		if o.Secret {
			secret = " Secret: never logged."
		}
		fmt.Fprintf(&b, "| `--%s` | %s | `%s` | `%s` | %s%s |\n", o.Flag, strings.Join(envs, ", "), o.File, def, o.Doc, secret)
	}
	b.WriteString(`
When several environment variables name one setting, the first one listed wins.
` + "`SESSION_API_KEY`" + ` is accepted because OpenHands deployments set it for the same purpose.

## The admin key

On the first start (an empty data directory) agentd creates the admin user. With
` + "`AGENTD_ADMIN_KEY`" + ` set, that is the admin's key; otherwise a key is generated and printed once on
standard output. Only a hash of any key is stored. While ` + "`AGENTD_ADMIN_KEY`" + ` stays set, later
starts make sure it is still an admin key (re-adding it if it was deleted), so a deployment that
sets it can always use it.

## URLs users supply

agentd connects to some URLs that users choose, such as their ` + "`llm_base_url`" + `. For users who are not admins, those connections may not reach internal addresses:
loopback (` + "`127.0.0.0/8`" + `, ` + "`::1`" + `), private (` + "`10.0.0.0/8`" + `, ` + "`172.16.0.0/12`" + `, ` + "`192.168.0.0/16`" + `, ` + "`fc00::/7`" + `),
link-local (` + "`169.254.0.0/16`" + `, ` + "`fe80::/10`" + `), cloud metadata (` + "`169.254.169.254`" + `, ` + "`fd00:ec2::254`" + ` and
others), carrier-grade NAT (` + "`100.64.0.0/10`" + `), unspecified, multicast and reserved addresses, and the
IPv6 forms of all of them (IPv4-mapped, NAT64, 6to4). A URL naming one is refused when the
user stores it (422, saying which rule refused it), and every connection is checked again
on the address it actually goes to, so a DNS answer that changes later, or a redirect, does
not get around it. Those connections do not use the ` + "`HTTP_PROXY`" + `/` + "`HTTPS_PROXY`" + ` of the environment,
which would hide the address from the check. ` + "`--allow-internal`" + ` admits what an operator wants users
to reach, such as a model server on the same machine (` + "`--allow-internal 127.0.0.1`" + `) or on the
local network (` + "`10.1.2.0/24`" + `, ` + "`ollama.internal`" + `). Admins are not restricted, nor is the server's own
` + "`--llm-base-url`" + `.

## Sandbox specs

Specs are the templates sandboxes start from. agentd has a built-in ` + "`default`" + ` spec; the config
file adds more (or replaces ` + "`default`" + `) with ` + "`[[sandbox_specs]]`" + ` tables:

` + "```toml" + `
[[sandbox_specs]]
id = "offline"
description = "No network, bounded resources"
command = ["agentd", "runtime"]      # the tool router; "agentd" is agentd's runtime build
initial_env = { LANG = "C.UTF-8" }
working_dir = "/workspace"           # the workspace as seen inside the sandbox
image = ""                           # docker backend: the image
rootfs = ""                          # bwrap backend: a root filesystem directory
network = "none"                     # "host" (default) or "none"
[sandbox_specs.limits]
memory_mb = 2048
cpus = 2.0
pids = 512
disk_mb = 0                          # 0 means unlimited
` + "```" + `

A backend that cannot honour part of a spec refuses to start sandboxes from it with a message
that says what, and ` + "`GET /api/v1/sandbox-specs/search`" + ` lists those warnings per spec. The
` + "`process`" + ` backend does not isolate anything: it cannot cut the network or enforce limits.

## Sandbox backends

| Backend | What it is |
|---|---|
| ` + "`process`" + ` | Each sandbox is a directory under the data directory and an ` + "`agentd runtime`" + ` process in its own session, reached on a unix socket. No isolation: for development. |
| ` + "`bwrap`" + ` | Each sandbox runs ` + "`agentd runtime`" + ` under bubblewrap with its own user (no capabilities), PID, mount, IPC, UTS and cgroup namespaces, and with network ` + "`none`" + ` its own empty network namespace. It sees the host's system directories (or the spec's ` + "`rootfs`" + `) read-only; its workspace and a private ` + "`/tmp`" + ` are the only writable places. Memory, CPU and process limits are cgroup limits (v1 or v2); pause freezes the sandbox's cgroup. Needs bubblewrap and root (to create cgroups). |

` + "`auto`" + ` picks ` + "`bwrap`" + ` when bubblewrap is installed and a throwaway sandbox starts (bwrap and cgroups
work), and otherwise ` + "`process`" + `, with a warning that says why in the log and in the spec listing.
An explicit ` + "`bwrap`" + ` that cannot work here stops the server with the reason.

The ` + "`bwrap`" + ` backend cannot honour an ` + "`image`" + ` or a disk limit. A ` + "`rootfs`" + ` must be a directory with
` + "`/bin/sh`" + ` (the runtime build mounted into it must then be statically linked, as ` + "`make build`" + `
builds it). Its sandboxes' cgroups are ` + "`agentd/<12 hex digits>/<sandbox id>`" + ` in each hierarchy
(the digits name the data directory, so two servers on one machine keep apart); ` + "`pids`" + ` counts
threads as well as processes.

## Files in the data directory

| Path | What |
|---|---|
| ` + "`agentd.db`" + ` | the SQLite database (WAL mode) |
| ` + "`keyring.json`" + ` | the server keys that seal secrets (mode 0600); ` + "`agentd rotate-key`" + ` replaces them |
| ` + "`agentd.lock`" + ` | held while a server runs, so two servers never share a data directory |
| ` + "`bin/agentd-runtime-<hash>`" + ` | the runtime build that sandboxes run, installed read-only from the agentd binary at start-up; those of earlier versions are removed |
| ` + "`sandboxes/process/<id>/`" + ` | a sandbox of the process backend: ` + "`workspace/`" + `, ` + "`runtime.sock`" + `, ` + "`runtime.log`" + ` |
| ` + "`sandboxes/bwrap/<id>/`" + ` | a sandbox of the bwrap backend: ` + "`workspace/`" + `, ` + "`runtime.sock`" + `, ` + "`runtime.log`" + ` |

## Key rotation

` + "`agentd rotate-key --data-dir DIR`" + ` (with ` + "`agentd serve`" + ` stopped) creates a new server key, reseals every
stored secret under it in one transaction, and then drops the old key. It is safe to interrupt:
until the last step the keyring holds both keys.
`)
	return b.String()
}
