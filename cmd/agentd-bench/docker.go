package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/docker"
	"github.com/agentd/agentd/internal/sandbox/docker/dockertest"
)

// Docker runs are slower than process ones; they have their own counts.
var (
	dockerStarts = flag.Int("docker-starts", 20, "docker sandbox starts to time")
	dockerCycles = flag.Int("docker-cycles", 50, "docker pause/resume cycles to time")
)

// benchImage is the image the docker rows run, imported by dockertest from the host's tools.
const benchImage = "agentd-bench/sandbox:latest"

// benchDocker measures the docker backend beside the same engine calls made directly through
// the same client: start to RUNNING beside a bare ContainerCreate+ContainerStart of the same
// image on the network the sandboxes join (the backend's egress bridge), and pause and resume
// beside ContainerPause and ContainerUnpause of a bare container. The bare start on the
// engine's default network is timed too: a user-defined network costs the engine more.
// The engine is DOCKER_HOST's if that is set (it must run on this machine), else a private
// dockerd started for the run. Without either, it returns no rows and a note that says why.
func benchDocker(ctx context.Context, binary, tmp string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	if *dockerStarts < 1 || *dockerCycles < 1 {
		return nil, nil, errors.New("-docker-starts and -docker-cycles must be positive")
	}
	cli, where, stop, err := openEngine(ctx)
	if errors.Is(err, dockertest.ErrUnavailable) {
		return nil, []string{"docker rows skipped: " + err.Error() + "; set DOCKER_HOST to use a running engine."}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	progress("docker: importing %s into %s", benchImage, where)
	if err := dockertest.BuildImage(ctx, cli, benchImage); err != nil {
		return nil, nil, err
	}
	defer cli.ImageRemove(context.WithoutCancel(ctx), benchImage, client.ImageRemoveOptions{Force: true})

	dataDir := filepath.Join(tmp, "docker-data")
	log := benchLogger(logw)
	b, err := docker.New(docker.Options{Host: cli.DaemonHost(), Root: filepath.Join(dataDir, "sandboxes", "docker"), Binary: binary, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	wb := &withImage{Backend: b, image: benchImage, cli: cli}
	srv, err := startPooledServer(ctx, wb, dataDir, 1, log)
	if err != nil {
		return nil, nil, err
	}
	defer srv.close()

	progress("docker: timing %d sandbox starts", *dockerStarts)
	// The default spec has a warm pool of one; specCold is the same spec without one.
	var starts, bares, defaults, claims []time.Duration
	for i := range warmups + *dockerStarts {
		claim, err := srv.timeClaim(ctx)
		if err != nil {
			return nil, nil, err
		}
		// The pool's refill runs beside nothing timed.
		if err := srv.waitPool(ctx, 1); err != nil {
			return nil, nil, err
		}
		start, err := srv.timeStartOf(ctx, specCold)
		if err != nil {
			return nil, nil, err
		}
		// The sandbox's network exists once a sandbox has joined it.
		bare, err := timeBareStart(ctx, cli, wb.lastNetwork())
		if err != nil {
			return nil, nil, err
		}
		onDefault, err := timeBareStart(ctx, cli, "")
		if err != nil {
			return nil, nil, err
		}
		if i >= warmups {
			starts, bares, defaults = append(starts, start), append(bares, bare), append(defaults, onDefault)
			claims = append(claims, claim)
		}
	}
	progress("docker: timing %d pause/resume cycles", *dockerCycles)
	pauseRows, err := benchDockerPause(ctx, srv, cli, *dockerCycles)
	if err != nil {
		return nil, nil, err
	}
	const what, base = "sandbox start to RUNNING (docker backend, network egress)", "ContainerCreate+ContainerStart of the same image on the same network"
	const claimed = "sandbox start to RUNNING claimed from a warm pool (docker backend)"
	rows := []row{
		timeRow(what+", p50", 50, starts, bares, base),
		timeRow(what+", p99", 99, starts, bares, base),
		timeRow("ContainerCreate+ContainerStart on the sandboxes' network (the backend's egress bridge), p50", 50, bares, defaults, "the same on the engine's default network"),
		timeRow(claimed+", p50", 50, claims, bares, base),
		timeRow(claimed+", p99", 99, claims, bares, base),
		timeRow(claimed+", p50", 50, claims, starts, "a cold start of the same spec"),
	}
	return append(rows, pauseRows...), []string{fmt.Sprintf(
		"docker rows: %d starts and %d pause/resume cycles on %s; a docker start also creates the workspace volume and waits for the runtime to answer.",
		*dockerStarts, *dockerCycles, where), goalNote("docker warm claim", percentile(claims, 50), poolDockerGoal)}, nil
}

// openEngine returns a client of DOCKER_HOST's engine, or of a private dockerd it starts, with
// a description of it and the function that releases it.
func openEngine(ctx context.Context) (*client.Client, string, func(), error) {
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		cli, err := client.New(client.WithHost(host))
		if err != nil {
			return nil, "", nil, err
		}
		if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
			cli.Close()
			return nil, "", nil, fmt.Errorf("DOCKER_HOST %s: %w", host, err)
		}
		return cli, "the engine at DOCKER_HOST " + host, func() { cli.Close() }, nil
	}
	d, err := dockertest.Start(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	return d.Client, "a private dockerd (Debian docker.io)", func() { d.Stop() }, nil
}

// timeBareStart creates and starts a container of benchImage that sleeps, on network ("" for
// the engine's default), and returns the time that took; it removes the container
// afterwards, untimed.
func timeBareStart(ctx context.Context, cli *client.Client, network string) (time.Duration, error) {
	t0 := time.Now()
	id, err := startBare(ctx, cli, network)
	d := time.Since(t0)
	if id != "" {
		if _, rerr := cli.ContainerRemove(context.WithoutCancel(ctx), id, client.ContainerRemoveOptions{Force: true}); rerr != nil && err == nil {
			err = rerr
		}
	}
	return d, err
}

// startBare creates and starts a container of benchImage running sleep, on network ("" for
// the engine's default); the id is set once created, even when the start fails.
func startBare(ctx context.Context, cli *client.Client, network string) (string, error) {
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: benchImage, Cmd: []string{"sleep", "600"}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(network)},
	})
	if err != nil {
		return "", fmt.Errorf("bare container create: %w", err)
	}
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return c.ID, fmt.Errorf("bare container start: %w", err)
	}
	return c.ID, nil
}

// benchDockerPause times n pause/resume cycles of one docker sandbox through the service
// (resume returns once the runtime answers again) beside ContainerPause and ContainerUnpause
// of a bare container. Rounds interleave the two.
func benchDockerPause(ctx context.Context, s *server, cli *client.Client, n int) ([]row, error) {
	svc := s.app.Sandboxes
	sb, done, err := s.runningSandboxOf(ctx, specCold) // not the pool's: its refill would run beside the timing
	defer done()
	if err != nil {
		return nil, err
	}
	bare, err := startBare(ctx, cli, "")
	if bare != "" {
		defer cli.ContainerRemove(context.WithoutCancel(ctx), bare, client.ContainerRemoveOptions{Force: true})
	}
	if err != nil {
		return nil, err
	}
	timed := func(f func() error) (time.Duration, error) {
		t0 := time.Now()
		err := f()
		return time.Since(t0), err
	}
	var pauses, resumes, rawPauses, rawResumes []time.Duration
	for i := range warmups + n {
		pause, err := timed(func() error { return svc.Pause(ctx, s.ownerID, sb.ID) })
		if err != nil {
			return nil, err
		}
		resume, err := timed(func() error { return svc.Resume(ctx, s.ownerID, sb.ID) })
		if err != nil {
			return nil, err
		}
		rawPause, err := timed(func() error { _, err := cli.ContainerPause(ctx, bare, client.ContainerPauseOptions{}); return err })
		if err != nil {
			return nil, err
		}
		rawResume, err := timed(func() error { _, err := cli.ContainerUnpause(ctx, bare, client.ContainerUnpauseOptions{}); return err })
		if err != nil {
			return nil, err
		}
		if i >= warmups {
			pauses, resumes = append(pauses, pause), append(resumes, resume)
			rawPauses, rawResumes = append(rawPauses, rawPause), append(rawResumes, rawResume)
		}
	}
	const pauseBase, resumeBase = "ContainerPause of a bare container", "ContainerUnpause of a bare container"
	return []row{
		timeRow("pause (docker backend), p50", 50, pauses, rawPauses, pauseBase),
		timeRow("resume, runtime answers again (docker backend), p50", 50, resumes, rawResumes, resumeBase),
	}, nil
}

// withImage gives the server's specs that name no image (the built-in default spec) the
// bench's image, so the bench's server runs its docker sandboxes without a config file, and
// notes the network each sandbox it starts joined.
type withImage struct {
	*docker.Backend
	image string
	cli   *client.Client

	mu      sync.Mutex
	network string
}

// lastNetwork is the network the last sandbox started joined.
func (w *withImage) lastNetwork() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.network
}

func (w *withImage) spec(spec sandbox.Spec) sandbox.Spec {
	if spec.Image == "" {
		spec.Image = w.image
	}
	return spec
}

// Start implements sandbox.Backend.
func (w *withImage) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	req.Spec = w.spec(req.Spec)
	inst, err := w.Backend.Start(ctx, req)
	if err != nil {
		return inst, err
	}
	// Its container is labelled with its id (agentd.sandbox).
	list, err := w.cli.ContainerList(ctx, client.ContainerListOptions{Filters: client.Filters{}.Add("label", "agentd.sandbox="+req.ID)})
	if err != nil || len(list.Items) != 1 {
		err = fmt.Errorf("the container of sandbox %s: %d found, %v", req.ID, len(list.Items), err)
		return sandbox.Instance{}, errors.Join(err, w.Backend.Destroy(ctx, inst))
	}
	w.mu.Lock()
	w.network = list.Items[0].HostConfig.NetworkMode
	w.mu.Unlock()
	return inst, nil
}

// CheckSpec implements sandbox.SpecChecker.
func (w *withImage) CheckSpec(spec sandbox.Spec) error { return w.Backend.CheckSpec(w.spec(spec)) }
