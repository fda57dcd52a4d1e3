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

agentd connects to some URLs that users choose, such as their ` + "`llm_base_url`" + `, their webhooks and the hosts
of their git provider tokens. For users who are not admins, those connections may not reach internal addresses:
loopback (` + "`127.0.0.0/8`" + `, ` + "`::1`" + `), private (` + "`10.0.0.0/8`" + `, ` + "`172.16.0.0/12`" + `, ` + "`192.168.0.0/16`" + `, ` + "`fc00::/7`" + `),
link-local (` + "`169.254.0.0/16`" + `, ` + "`fe80::/10`" + `), cloud metadata (` + "`169.254.169.254`" + `, ` + "`fd00:ec2::254`" + ` and
others), carrier-grade NAT (` + "`100.64.0.0/10`" + `), unspecified, multicast and reserved addresses, and the
IPv6 forms of all of them (IPv4-mapped, NAT64, 6to4). A URL naming one is refused when the
user stores it (422, saying which rule refused it), as is a host written as a numeric
shorthand of an IPv4 address (` + "`127.1`" + `, ` + "`2130706433`" + `, ` + "`0x7f000001`" + `, ` + "`0`" + `), which some programs take for
the address and others for a name, whatever the address; every connection is checked again
on the address it actually goes to, so a DNS answer that changes later, or a redirect, does
not get around it. Those connections do not use the ` + "`HTTP_PROXY`" + `/` + "`HTTPS_PROXY`" + ` of the environment,
which would hide the address from the check. ` + "`--allow-internal`" + ` admits what an operator wants users
to reach, such as a model server on the same machine (` + "`--allow-internal 127.0.0.1`" + `) or on the
local network (` + "`10.1.2.0/24`" + `, ` + "`ollama.internal`" + `). Admins are not restricted, nor is the server's own
` + "`--llm-base-url`" + `.

Calls to git providers are made for a user, so they go through the same check, also to the
server's ` + "`--github-api-url`" + `, ` + "`--gitlab-api-url`" + ` and ` + "`--bitbucket-api-url`" + ` (point those at an internal
server and allow it). A provider host a user gives may be plain ` + "`http://`" + ` only when the allow-list
admits it (by name, by address, or by every address its name resolves to) or the user is an
admin: otherwise the token would cross the network in clear.

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
network = "none"                     # "egress" (default), "none" or "host"
[sandbox_specs.limits]                # each limit left out or 0 takes the server's default
memory_mb = 2048
cpus = 2.0
pids = 512
tmp_mb = 256                         # the private /tmp
disk_mb = 0
` + "```" + `

Every spec has limits: the default spec has the server's defaults (` + "`sandbox_memory_mb`" + `,
` + "`sandbox_cpus`" + `, ` + "`sandbox_pids`" + `, ` + "`sandbox_tmp_mb`" + `), and a spec that leaves a limit out gets the
default for it. A spec may ask for more or less, up to the ceiling (` + "`sandbox_max_memory_mb`" + ` and
the like); a spec above the ceiling stops the server at start-up with an error that names the
spec, the limit and the ceiling. A default of 0 means no limit by default, a ceiling of 0 no
ceiling.

A backend that cannot honour part of a spec refuses to start sandboxes from it with a message
that says what, and ` + "`GET /api/v1/sandbox-specs/search`" + ` lists those warnings per spec. The
` + "`process`" + ` backend does not isolate anything: it cannot cut the network or enforce limits,
and its standing warning, shown with every spec, says so.

### Network modes

| Mode | What a sandbox can reach |
|---|---|
| ` + "`egress`" + ` (default) | The internet: outbound connections (package installs, git) from a network namespace of its own. Not the host's loopback (agentd's port and every local service), not any other address of the host, not link-local addresses (cloud metadata services), and nothing of other sandboxes. Names resolve through the host's resolver. Nothing outside can connect in. |
| ` + "`none`" + ` | Only its own loopback: no connection in or out. |
| ` + "`host`" + ` | bwrap: the host's network namespace itself, its loopback and every port on it included; docker: the engine's default bridge, from which the host's addresses answer. Only for an administrator's spec that asks for it by name: the log and the spec listing carry a warning. |

With ` + "`bwrap`" + `, egress is ` + "`slirp4netns`" + ` (a user-space network stack, run as the sandbox uid in
the sandbox's cgroup) on the sandbox's own network namespace, and iptables rules, which agentd
adds at start-up to the host's ` + "`OUTPUT`" + ` chain (chain ` + "`AGENTD-SANDBOX-<uid>`" + `), refuse the
sandbox uid's connections to the host's own addresses and to link-local ones, DNS on port 53
excepted. Without ` + "`slirp4netns`" + `, the tun device or a working ` + "`iptables`" + `, egress specs cannot start:
the server logs why at start-up and the spec listing says it. With ` + "`docker`" + `, egress is a bridge
network of agentd's own (` + "`agentd-egress-<hash>`" + `, removed when no sandbox is left) whose traffic to
the host itself, to link-local addresses and between its containers iptables rules refuse.

### Who sandboxes run as

Every command of a ` + "`bwrap`" + ` or ` + "`docker`" + ` sandbox (the terminal, ` + "`setup.sh`" + `, git) runs as one
unprivileged host uid and gid (` + "`sandbox_uid`" + `), never as root and with no capability: files a
sandbox leaves in its workspace belong to that uid, and workspaces are mounted ` + "`nosuid`" + ` and
` + "`nodev`" + ` (docker: no-new-privileges and an empty bounding set). On ` + "`bwrap`" + ` the runtime shares
that uid and is kept from the commands by being not dumpable. On ` + "`docker`" + ` the container's init
and the runtime are root inside the container (and so on the host, as the engine does not remap
uids), with no capability but ` + "`CAP_SETUID`" + `, ` + "`CAP_SETGID`" + ` and ` + "`CAP_KILL`" + ` (and ` + "`CAP_SETPCAP`" + `,
which the runtime uses to empty the bounding set and then drops): they hold the container's
output, which the commands therefore cannot write to; the runtime does its file work as the
sandbox uid. The uid should belong to nothing else on the machine. One uid serves every sandbox:
sandboxes are kept apart by their namespaces (each sees only its own processes, files and
network), and a single uid keeps the host's firewall rule and file ownership simple.

## Sandbox backends

| Backend | What it is |
|---|---|
| ` + "`process`" + ` | Each sandbox is a directory under the data directory and an ` + "`agentd runtime`" + ` process in its own session, reached on a unix socket. No isolation: for development. |
| ` + "`bwrap`" + ` | Each sandbox runs ` + "`agentd runtime`" + ` under bubblewrap as the sandbox uid, with its own user (root inside is the sandbox uid outside, without capabilities), PID, mount, IPC, UTS, cgroup and network namespaces. It sees the host's system directories (or the spec's ` + "`rootfs`" + `) read-only; its workspace and a private ` + "`/tmp`" + ` are the only writable places. Memory, CPU and process limits are cgroup limits (v1 or v2); pause freezes the sandbox's cgroup. Needs bubblewrap, ` + "`setpriv`" + ` (util-linux) and root (to create cgroups), and for egress ` + "`slirp4netns`" + ` and ` + "`iptables`" + `. |
| ` + "`docker`" + ` | Each sandbox is a container of the spec's image, with its workspace on a volume; its init and runtime are root with a few capabilities, its commands the sandbox uid with none. The engine must run on this machine. |
| ` + "`kubernetes`" + ` | Each sandbox is a pod of the spec's image in ` + "`kubernetes_namespace`" + `, with a Secret (its session key and its runtime's TLS certificate and key), a volume claim for its workspace and a NetworkPolicy. An init container from agentd's image (` + "`kubernetes_runtime_image`" + `) copies agentd into the pod and writes the pod's network rules; the runtime is root with a few capabilities, its commands the sandbox uid with none. Memory and CPU are the pod's limits (it requests a quarter of them), ` + "`disk_mb`" + ` its ephemeral storage and its workspace volume's size, ` + "`tmp_mb`" + ` a memory-backed ` + "`/tmp`" + `; a pod spec has no process limit (the kubelet's ` + "`podPidsLimit`" + ` bounds every pod of a node). Its sandboxes run off this machine and any replica reaches them. |

` + "`auto`" + ` picks ` + "`bwrap`" + ` when bubblewrap is installed and a throwaway sandbox starts (bwrap and cgroups
work), and otherwise ` + "`process`" + `, with a warning that says why in the log and in the spec listing.
An explicit ` + "`bwrap`" + ` that cannot work here stops the server with the reason. The throwaway sandbox
has a minute to run ` + "`true`" + ` and end (a broken bubblewrap fails at once; on two saturated cores it
has taken ten seconds); when the minute passes, the server stops and says the machine was too
busy to tell, with ` + "`auto`" + ` as well: not knowing is no reason to run sandboxes unconfined.

The ` + "`bwrap`" + ` backend cannot honour an ` + "`image`" + ` or a disk limit. A ` + "`rootfs`" + ` must be a directory with
` + "`/bin/sh`" + ` (the runtime build mounted into it must then be statically linked, as ` + "`make build`" + `
builds it). Its sandboxes' cgroups are ` + "`agentd/<12 hex digits>/<sandbox id>`" + ` in each hierarchy
(the digits name the data directory, so two servers on one machine keep apart); ` + "`pids`" + ` counts
threads as well as processes. A ` + "`rootfs`" + ` must be readable by the sandbox uid.

### What survives a pause

| Backend | Pause | What a resumed sandbox has |
|---|---|---|
| ` + "`process`" + ` | stops every process of the sandbox (SIGSTOP) | everything: processes, terminal sessions, MCP servers, files |
| ` + "`bwrap`" + ` | freezes the sandbox's cgroup | everything: processes, terminal sessions, MCP servers, files |
| ` + "`docker`" + ` | freezes the container (Docker's pause) | everything: processes, terminal sessions, MCP servers, files |
| ` + "`kubernetes`" + ` | removes the pod, keeping its Secret and its workspace's volume claim | the workspace's files only: a new pod on the same volume, new processes, new terminal sessions; a conversation's MCP servers start again when it next configures them, and its agent is told so (an environment message in its log, which the model reads at its next step) |

### The kubernetes backend

` + "`--sandbox-backend kubernetes`" + ` reaches the cluster with ` + "`--kubeconfig`" + ` (or ` + "`KUBECONFIG`" + `), or, when
none is given, with the in-cluster configuration of the pod agentd runs in. At start-up it
checks that the namespace exists and that agentd may do there all it needs (asked of the API
server with SelfSubjectAccessReviews), and refuses to start, saying what is missing, when it
may not. The Role agentd's identity needs in the namespace:

` + "```yaml" + `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: agentd-sandboxes
  namespace: agentd-sandboxes
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [create, get, list, watch, delete]
  - apiGroups: [""]
    resources: [pods/portforward]
    verbs: [create]                    # --kubernetes-reach port-forward
  - apiGroups: [""]
    resources: [secrets]
    verbs: [create, get, list, watch, patch, delete]
  - apiGroups: [""]
    resources: [persistentvolumeclaims]
    verbs: [create, get, delete]
  - apiGroups: [networking.k8s.io]
    resources: [networkpolicies]
    verbs: [create, delete]
` + "```" + `

Every object of a sandbox is named ` + "`agentd-sb-<id>`" + ` (its claim ` + "`agentd-sb-<id>-ws`" + `) and labelled
` + "`app.kubernetes.io/managed-by=agentd`" + `, ` + "`agentd.dev/installation`" + ` (` + "`kubernetes_installation`" + `),
` + "`agentd.dev/sandbox`" + ` and ` + "`agentd.dev/owner`" + `; the server lists and watches its sandboxes' pods and Secrets by the
first two (client-go informers: ` + "`list`" + ` and ` + "`watch`" + `), reads their state from that view, and marks a
sandbox's Secret paused or running (` + "`patch`" + `). One replica at a time (the one holding the reconciler
lease in the store) acts on what the watch tells: a sandbox whose pod is removed or fails becomes
` + "`MISSING`" + ` at once, and a labelled sandbox the store does not know is removed after
` + "`--sandbox-orphan-grace`" + `.
Nothing is pulled by agentd: the images (agentd's and the specs') come from the nodes' registries
as the cluster's policy allows.

The runtime of each sandbox serves TLS on port 8443 with a certificate made for that sandbox
alone, whose key's digest agentd stores with the sandbox and pins on every connection, at the
pod's address (` + "`--kubernetes-reach ip`" + `, agentd in the cluster) or through the API server's
port forwarding (` + "`port-forward`" + `, agentd outside it). Network egress and none are rules the
pod's init container writes with nftables into the pod's own network namespace, before the
sandbox starts, for every process of the pod: egress refuses new connections to
` + "`kubernetes_deny`" + `, the node's addresses and the API server's, DNS to the pod's name servers
excepted; none refuses every connection out. They hold whatever the cluster's network plugin;
the NetworkPolicy made with each sandbox says the same to plugins that enforce policies. The
init container has ` + "`CAP_NET_ADMIN`" + ` and ` + "`CAP_CHOWN`" + ` only; the nodes must allow that (no
privileged pods are used). ` + "`CAP_NET_ADMIN`" + ` is beyond Pod Security's ` + "`baseline`" + ` level (the
sandbox's container, root with ` + "`CAP_SETUID`" + `, ` + "`CAP_SETGID`" + `, ` + "`CAP_KILL`" + ` and ` + "`CAP_SETPCAP`" + `, is within
it): where Pod Security admission is enforced, label the namespace
` + "`pod-security.kubernetes.io/enforce=privileged`" + `. The commands' ` + "`HOME`" + ` is ` + "`/tmp`" + ` unless the spec
sets one. The workspace is always a volume claim, so that it outlives a paused
pod; the cluster needs a storage class that provisions claims.

## Files in the data directory

| Path | What |
|---|---|
| ` + "`agentd.db`" + ` | the SQLite database (WAL mode) |
| ` + "`keyring.json`" + ` | the server keys that seal secrets (mode 0600), made at the first start of a server on SQLite that is given no keyring; ` + "`agentd rotate-key`" + ` replaces them |
| ` + "`agentd.lock`" + ` | held while a server runs, so two servers never share a data directory |
| ` + "`bin/agentd-runtime-<hash>`" + ` | the runtime build that sandboxes run, installed read-only from the agentd binary at start-up; those of earlier versions are removed |
| ` + "`sandboxes/process/<id>/`" + ` | a sandbox of the process backend: ` + "`workspace/`" + `, ` + "`runtime.sock`" + `, ` + "`runtime.log`" + ` |
| ` + "`sandboxes/bwrap/<id>/`" + ` | a sandbox of the bwrap backend: ` + "`workspace/`" + `, ` + "`runtime.sock`" + `, ` + "`runtime.log`" + ` |

## Key rotation

` + "`agentd rotate-key --data-dir DIR`" + ` (with ` + "`agentd serve`" + ` stopped) creates a new server key, reseals every
stored secret under it in one transaction, and then drops the old key. It is safe to interrupt:
until the last step the keyring holds both keys.

## Replicas

Several servers (replicas) serve one installation when they share a PostgreSQL database
(` + "`--database postgres://…`" + `) and a keyring file (` + "`--keyring-file`" + `, below). Each has a data
directory of its own and a node name of its own (` + "`--node-name`" + `; the default, the host name and
a digest of the data directory, stays the same across restarts, so only two replicas of one
machine need thought: their data directories differ, and so do their names). They need nothing
else from each other: any replica answers any request, streams on any replica carry every
replica's events, and a load balancer in front of them needs no stickiness (allow the streams'
idle connections for at least ` + "`--stream-heartbeat`" + `). A conversation runs on the replica that
holds its lease; when that replica dies, another takes it over after ` + "`--conversation-lease`" + ` if
it reaches the conversation's sandbox. The process, bwrap and docker backends keep a sandbox on
its node: a conversation whose node has no live replica waits for one (its stream says so) and
goes on when the node's replica starts again; every replica reaches the kubernetes backend's
sandboxes. What survives a pause: the process, bwrap and docker backends freeze the sandbox's
processes, which keep their memory and terminals. ` + "`deploy/`" + ` runs the replicas on Kubernetes
as a Deployment (docs/kubernetes.md).

## The keyring of a server on PostgreSQL

A server on PostgreSQL (` + "`--database postgres://…`" + `) never makes a keyring: give it one with
` + "`--keyring-file`" + ` (a file that ` + "`agentd keyring create FILE`" + ` writes, mode 0600; mount it as a
Kubernetes Secret, for example) or its content in ` + "`AGENTD_KEYRING`" + `. The server reads the file
again every 10 s. The first server to start on a database stores a value sealed with its
keyring; a server whose keyring cannot open it refuses to start with an error that says so.
` + "`agentd rotate-key --database postgres://… --keyring-file FILE`" + `, with the servers stopped,
reseals every stored secret under a new key and rewrites the file; a keyring given as content
cannot be rotated in place.

To rotate the key while the replicas run, give the commands the same ` + "`--database`" + ` and
` + "`--keyring-file`" + ` (the file every replica reads, through whatever delivers it to them):

1. ` + "`agentd keyring add-key`" + ` adds a new key to the file, not active yet, and prints its id
   (hexadecimal; an id of an older keyring that begins with a dash is given after ` + "`--`" + `).
2. ` + "`agentd keyring activate KEY`" + ` makes it the key that seals, once every live replica says,
   in its heartbeat in the store, that its keyring holds it; until then it refuses and names the
   replicas that do not. So every replica can open under the new key before any seals with it.
3. ` + "`agentd keyring reseal`" + ` reseals every stored secret under the active key, in one
   transaction, once every live replica seals with it.
4. ` + "`agentd keyring prune`" + ` drops the old keys from the file, once no stored value is sealed
   under them.

Each step refuses, saying why, until the replicas are ready for it (they read the file every
` + "`--keyring-reload`" + `, 10 s by default, and say what they hold at each heartbeat), so running
a step again later is always safe.
`)
	return b.String()
}
