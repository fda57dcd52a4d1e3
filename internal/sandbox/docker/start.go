package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/sandbox"
)

// defaultCommand starts the runtime when a spec names no command.
var defaultCommand = []string{"agentd", "runtime"}

// cleanupTimeout bounds the removal of what a failed start left, which runs even when the
// start's own context is done.
const cleanupTimeout = time.Minute

// minMemory is the smallest memory limit Docker accepts.
const minMemory = 6 << 20

// Start creates <Root>/<id>/ with the session key in it, the workspace volume and the
// container, and starts the container. It returns once the runtime has made its socket (see
// waitSocket); the runtime answers a moment later. The image must already be on the engine:
// Start does not pull.
func (b *Backend) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	if err := checkSpec(req.Spec); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if _, err := req.RuntimeKey(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if !validID(req.ID) {
		return sandbox.Instance{}, fmt.Errorf("start sandbox: %w", errInvalidID(req.ID))
	}
	dir, err := b.root.Create(req.ID)
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	inst, err := b.start(ctx, dir, req)
	if err != nil {
		// What the engine created may not have reached this side (a cancelled request can
		// still create the container), so remove by label, under a context of its own.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rmErr := b.remove(cctx, req.ID); rmErr != nil {
			b.log.Error("remove sandbox after failed start", "sandbox_id", req.ID, "err", rmErr)
		}
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	return inst, nil
}

// start makes the rest of the sandbox and starts its container.
func (b *Backend) start(ctx context.Context, dir string, req sandbox.StartRequest) (sandbox.Instance, error) {
	// The run directory and the key are root's, as the runtime is until it has read the key
	// (and deleted it) and made its socket beside it: the commands cannot even look in.
	key, _ := req.RuntimeKey() // a pooled start's is its pool's secret
	if err := os.WriteFile(keyPath(dir), []byte(key), 0o400); err != nil {
		return sandbox.Instance{}, fmt.Errorf("write session key: %w", err)
	}
	home, err := b.imageHome(ctx, req.Spec.Image)
	if err != nil {
		return sandbox.Instance{}, err
	}
	labels := b.labels(req.ID, req.OwnerID)
	vol := volumeName(req.ID)
	created, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vol, Labels: labels})
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("create workspace volume: %w", err)
	}
	// The engine runs on this machine, so its volume's directory is here to give to the
	// sandbox uid; without that the runtime could not write its workspace.
	if err := os.Chown(created.Volume.Mountpoint, b.uid, b.uid); err != nil {
		return sandbox.Instance{}, fmt.Errorf("give the workspace volume to the sandbox uid (the engine must run on this machine): %w", err)
	}
	workdir := workingDir(req.Spec)
	hc := b.hostConfig(dir, vol, workdir, req.Spec)
	if sandbox.NetworkOf(req.Spec) == sandbox.NetworkEgress {
		name, err := b.egressNetwork(ctx)
		if err != nil {
			return sandbox.Instance{}, err
		}
		hc.NetworkMode = container.NetworkMode(name)
	}
	ctr, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       containerName(req.ID),
		Config:     b.containerConfig(req, workdir, home, labels),
		HostConfig: hc,
	})
	if cerrdefs.IsNotFound(err) {
		return sandbox.Instance{}, errNoImage(req.Spec.Image, err)
	}
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("create container: %w", err)
	}
	for _, w := range ctr.Warnings {
		b.log.Warn("docker create: "+w, "sandbox_id", req.ID)
	}
	if _, err := b.cli.ContainerStart(ctx, ctr.ID, client.ContainerStartOptions{}); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start container: %w", err)
	}
	if err := b.waitSocket(ctx, dir, ctr.ID); err != nil {
		return sandbox.Instance{}, err
	}
	b.log.Info("sandbox started", "sandbox_id", req.ID, "container_id", ctr.ID, "image", req.Spec.Image)
	return sandbox.Instance{
		ID:        req.ID,
		Endpoint:  endpoint(dir),
		Workspace: workdir,
		State:     instanceState{ContainerID: ctr.ID}.encode(),
	}, nil
}

func errNoImage(image string, err error) error {
	return fmt.Errorf("image %q is not on the engine (the docker backend does not pull images): %w", image, err)
}

// imageHome is the HOME the commands get when the image sets none: Docker would set the home
// of the container's user, root, which the commands cannot write; "/" is what Docker gives a
// uid without an account, as the sandbox uid is in ordinary images. Empty means the image's
// own stays.
func (b *Backend) imageHome(ctx context.Context, image string) (string, error) {
	res, err := b.cli.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) {
		return "", errNoImage(image, err)
	}
	if err != nil {
		return "", fmt.Errorf("inspect image %q: %w", image, err)
	}
	if res.Config != nil && slices.ContainsFunc(res.Config.Env, func(e string) bool { return strings.HasPrefix(e, "HOME=") }) {
		return "", nil
	}
	return "/", nil
}

// containerConfig runs the spec's command, the runtime, as root, with the flags that point it
// at the run directory and the workspace and name the uid its commands run as. The image's
// entrypoint is replaced, not prefixed. home, when not empty, is the HOME of the commands.
func (b *Backend) containerConfig(req sandbox.StartRequest, workdir, home string, labels map[string]string) *container.Config {
	argv := slices.Clone(req.Spec.Command)
	if len(argv) == 0 {
		argv = slices.Clone(defaultCommand)
	}
	if argv[0] == "agentd" {
		argv[0] = binaryInContainer
	}
	argv = append(argv,
		"--listen", "unix:"+path.Join(runInContainer, "runtime.sock"),
		"--workspace", workdir,
		"--sandbox-id", req.ID,
		"--key-file", path.Join(runInContainer, "key"),
		"--sandbox-uid", strconv.Itoa(b.uid))
	argv = req.RuntimeArgs(argv)
	// The image's environment (its PATH above all) stays; the spec's is laid over it. The
	// server's own environment is never passed on: it may hold LLM keys.
	env := []string{"TERM=xterm-256color"}
	if home != "" {
		env = append(env, "HOME="+home)
	}
	for _, k := range slices.Sorted(maps.Keys(req.Spec.InitialEnv)) {
		env = append(env, k+"="+req.Spec.InitialEnv[k])
	}
	return &container.Config{
		Image:      req.Spec.Image,
		Entrypoint: argv,
		Env:        env,
		WorkingDir: workdir,
		User:       "0:0",
		Labels:     labels,
	}
}

// hostConfig mounts the binary, the run directory and the workspace volume, and applies the
// spec's network policy and limits. No port is published.
func (b *Backend) hostConfig(dir, vol, workdir string, spec sandbox.Spec) *container.HostConfig {
	init := true
	hc := &container.HostConfig{
		Mounts: []mount.Mount{
			{Type: mount.TypeBind, Source: b.binary, Target: binaryInContainer, ReadOnly: true},
			{Type: mount.TypeBind, Source: dir, Target: runInContainer},
			// No copy of the image's directory into the volume: that would take back the
			// ownership Start gave the sandbox uid.
			{Type: mount.TypeVolume, Source: vol, Target: workdir, VolumeOptions: &mount.VolumeOptions{NoCopy: true}},
		},
		Init:      &init,
		Resources: resources(spec.Limits),
		// What the runtime needs to start its commands as the sandbox uid and signal them,
		// and to empty the bounding set they inherit; the commands get none of it, and no
		// setuid file may give them any.
		CapDrop:     []string{"ALL"},
		CapAdd:      runtimeCaps,
		SecurityOpt: []string{"no-new-privileges"},
	}
	if t := spec.Limits.TmpBytes; t > 0 {
		// A /tmp of its own, bounded like bwrap's, rather than the container's unbounded layer.
		hc.Tmpfs = map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", t)}
	}
	// "none" is Docker's none: a loopback of its own. "host" is the engine's default
	// network (a bridge, which reaches the host's addresses), not the host's network
	// namespace and its loopback. Start puts "egress" on the backend's own bridge.
	if spec.Network == sandbox.NetworkNone {
		hc.NetworkMode = network.NetworkNone
	}
	return hc
}

// runtimeCaps are the capabilities of the container's root: docker-init's and the runtime's
// (which keeps only CAP_SETUID, CAP_SETGID and CAP_KILL once it has cleared the bounding set).
var runtimeCaps = []string{"CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SETPCAP"}

// cpuShares is every container's CPU weight: a tenth of the default (1024), as the bwrap
// backend weighs its sandboxes, so that under contention a sandbox gets a tenth of what a
// process beside it gets. Where the engine's cgroup driver is systemd, containers are
// siblings of the services of system.slice (agentd's among them); with cgroupfs they are
// weighed against each other, and the engine's parent group as a whole against the rest.
const cpuShares = 102

// resources maps the spec's limits. Swap is not allowed beyond the memory limit, so a memory
// hog is killed rather than swapping the machine.
func resources(l sandbox.Limits) container.Resources {
	r := container.Resources{CPUShares: cpuShares}
	if l.MemoryBytes > 0 {
		r.Memory = l.MemoryBytes
		r.MemorySwap = l.MemoryBytes
	}
	if l.CPUs > 0 {
		r.NanoCPUs = int64(l.CPUs * 1e9)
	}
	if l.PIDs > 0 {
		pids := l.PIDs
		r.PidsLimit = &pids
	}
	return r
}

func workingDir(spec sandbox.Spec) string {
	if spec.WorkingDir == "" {
		return defaultWorkingDir
	}
	return path.Clean(spec.WorkingDir)
}

// CheckSpec implements sandbox.SpecChecker.
func (b *Backend) CheckSpec(spec sandbox.Spec) error { return checkSpec(spec) }

// checkSpec rejects what this backend cannot do, naming all of it at once.
func checkSpec(spec sandbox.Spec) error {
	switch spec.Network {
	case "", sandbox.NetworkEgress, sandbox.NetworkHost, sandbox.NetworkNone:
	default:
		return fmt.Errorf("unknown network policy %q", spec.Network)
	}
	if wd := spec.WorkingDir; wd != "" {
		if !path.IsAbs(wd) {
			return fmt.Errorf("working directory %q is not an absolute path", wd)
		}
		if c := path.Clean(wd); c == "/" || c == "/.agentd" || strings.HasPrefix(c, "/.agentd/") {
			return fmt.Errorf("working directory %q cannot hold the workspace volume", wd)
		}
	}
	var missing []string
	if spec.Image == "" {
		missing = append(missing, "a spec without an image")
	}
	if spec.Rootfs != "" {
		missing = append(missing, "rootfs (it runs images)")
	}
	if spec.Limits.DiskBytes > 0 {
		missing = append(missing, "a disk limit")
	}
	if m := spec.Limits.MemoryBytes; m > 0 && m < minMemory {
		missing = append(missing, "a memory limit below 6 MiB")
	}
	if len(missing) > 0 {
		return &sandbox.UnsupportedError{Backend: Name, What: missing}
	}
	return nil
}

// socketTimeout bounds Start's wait for the runtime's socket when ctx has no deadline.
const socketTimeout = 30 * time.Second

// waitSocket waits until the runtime has made its socket in the run directory dir (it has
// read and deleted its key by then).
func (b *Backend) waitSocket(ctx context.Context, dir, containerID string) error {
	begin, deadline := time.Now(), sandbox.WaitDeadline(ctx, socketTimeout)
	for delay, next := time.Millisecond, time.Now().Add(time.Second); ; delay = min(2*delay, 50*time.Millisecond) {
		if _, err := os.Lstat(socketPath(dir)); err == nil {
			return nil
		}
		if time.Now().After(next) { // now and then, whether the container still runs
			next = time.Now().Add(time.Second)
			res, err := b.cli.ContainerInspect(ctx, containerID, client.ContainerInspectOptions{})
			if err != nil {
				return fmt.Errorf("wait for the runtime's socket: %w", err)
			}
			if res.Container.State == nil || !res.Container.State.Running {
				return errors.New("the container exited before its runtime listened")
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the runtime made no socket within %v", time.Since(begin).Round(time.Millisecond))
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("wait for the runtime's socket: %w", err)
		}
		time.Sleep(delay)
	}
}
