package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/agentd/agentd/internal/sandbox"
)

// cleanupTimeout bounds the removal of what a failed start left, which runs even when the
// start's own context is done.
const cleanupTimeout = time.Minute

// CheckSpec implements sandbox.SpecChecker: a pod runs an image, in a network namespace of
// its own, and has no host root file system to run from.
func (b *Backend) CheckSpec(spec sandbox.Spec) error {
	var what []string
	if spec.Image == "" {
		what = append(what, "a spec without an image (a pod runs an image)")
	}
	if spec.Rootfs != "" {
		what = append(what, "a root file system directory (a pod runs an image, not a directory of the host)")
	}
	switch sandbox.NetworkOf(spec) {
	case sandbox.NetworkEgress, sandbox.NetworkNone:
	case sandbox.NetworkHost:
		what = append(what, `network "host" (a sandbox pod never shares its node's network)`)
	default:
		what = append(what, fmt.Sprintf("network %q", spec.Network))
	}
	if len(what) > 0 {
		return &sandbox.UnsupportedError{Backend: Name, What: what}
	}
	return nil
}

// Start creates the sandbox's Secret (its session key, its runtime's certificate and key,
// and the pod's manifest), its workspace volume claim, its NetworkPolicy and its pod, and
// returns once the sandbox's container runs (the runtime answers a moment later). If the pod
// cannot start (an image missing, the init step failing), Start fails with the reason the
// kubelet gives and removes all of it.
func (b *Backend) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	if err := b.CheckSpec(req.Spec); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if _, err := req.RuntimeKey(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	if !validID(req.ID) {
		return sandbox.Instance{}, fmt.Errorf("start sandbox: %w", errInvalidID(req.ID))
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	inst, err := b.start(ctx, req)
	if err != nil {
		// What the API server made may not have reached this side (a cancelled request can
		// still create the object), so remove by name, under a context of its own.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rmErr := b.remove(cctx, b.ns, req.ID); rmErr != nil {
			b.log.Error("remove sandbox after failed start", "sandbox_id", req.ID, "err", rmErr)
		}
		return sandbox.Instance{}, fmt.Errorf("start sandbox %s: %w", req.ID, err)
	}
	return inst, nil
}

func (b *Backend) start(ctx context.Context, req sandbox.StartRequest) (sandbox.Instance, error) {
	certPEM, keyPEM, pin, err := runtimeCert(req.ID, time.Now())
	if err != nil {
		return sandbox.Instance{}, fmt.Errorf("make the runtime's certificate: %w", err)
	}
	pod := b.pod(req)
	manifest, err := json.Marshal(pod)
	if err != nil {
		return sandbox.Instance{}, err
	}
	key, _ := req.RuntimeKey() // a pooled start's is its pool's secret (pool.go)
	meta := b.secretMeta(req)
	meta.Annotations[annotationPod] = podRunning
	secret := &corev1.Secret{
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			keySession: []byte(key),
			keyCert:    certPEM,
			keyTLSKey:  keyPEM,
			keyPod:     manifest,
		},
	}
	if err := create(ctx, "secret", func(ctx context.Context) error {
		_, err := b.client.CoreV1().Secrets(b.ns).Create(ctx, secret, metav1.CreateOptions{})
		return err
	}); err != nil {
		return sandbox.Instance{}, err
	}
	if err := create(ctx, "workspace volume claim", func(ctx context.Context) error {
		_, err := b.client.CoreV1().PersistentVolumeClaims(b.ns).Create(ctx, b.claim(req), metav1.CreateOptions{})
		return err
	}); err != nil {
		return sandbox.Instance{}, err
	}
	if err := create(ctx, "network policy", func(ctx context.Context) error {
		_, err := b.client.NetworkingV1().NetworkPolicies(b.ns).Create(ctx, b.networkPolicy(req), metav1.CreateOptions{})
		return err
	}); err != nil {
		return sandbox.Instance{}, err
	}
	if err := b.runPod(ctx, pod); err != nil {
		return sandbox.Instance{}, err
	}
	b.log.Info("sandbox started", "sandbox_id", req.ID, "pod", pod.Name, "namespace", b.ns, "image", req.Spec.Image)
	return sandbox.Instance{
		ID:        req.ID,
		Endpoint:  endpoint(req.ID),
		Workspace: workingDir(req.Spec),
		State:     instanceState{Namespace: b.ns, Pin: pin}.encode(),
	}, nil
}

// create runs a create call, with retries; an object already there (made by an earlier try
// whose answer was lost) is no error.
func create(ctx context.Context, what string, fn func(context.Context) error) error {
	tries := 0
	err := call(ctx, func(ctx context.Context) error {
		tries++
		err := fn(ctx)
		if tries > 1 && apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create the %s: %w", what, err)
	}
	return nil
}

// runPod creates pod and waits until its sandbox container runs, or fails with why it cannot.
// In the backend's namespace it waits on the informers' view, woken by the pod's events.
func (b *Backend) runPod(ctx context.Context, pod *corev1.Pod) error {
	var uid types.UID
	if err := create(ctx, "pod", func(ctx context.Context) error {
		p, err := b.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			uid = p.UID
		}
		return err
	}); err != nil {
		return err
	}
	w, err := b.synced(ctx, pod.Namespace)
	if err != nil {
		return fmt.Errorf("wait for the pod: %w", err)
	}
	seen, closed := false, b.closed
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		var (
			p    *corev1.Pod
			next <-chan struct{}
			tick <-chan time.Time
		)
		if w != nil {
			next = w.next(kindPod, pod.Name)
			p = w.cachedPod(pod.Namespace, pod.Labels[labelSandbox])
			if p != nil && uid != "" && p.UID != uid {
				p = nil // the view still has the pod before this one
			}
			if p == nil && seen {
				return fmt.Errorf("%w: the pod %s was removed before it ran", errPodEnded, pod.Name)
			}
			seen = seen || p != nil
		} else {
			err := call(ctx, func(ctx context.Context) (err error) {
				p, err = b.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				return err
			})
			if err != nil {
				return fmt.Errorf("wait for the pod: %w", err)
			}
			tick = time.After(delay)
		}
		if p != nil {
			running, err := podStarted(p)
			if err != nil {
				return err
			}
			if running {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the pod %s to run: %w (it is %s)", pod.Name, context.Cause(ctx), describe(p))
		case <-closed:
			w, closed = nil, nil // no more events: ask the API server
		case <-next:
		case <-tick:
		}
	}
}

// fatalWaits are the reasons a container waits for that no wait mends.
var fatalWaits = map[string]bool{
	"ErrImageNeverPull": true, "InvalidImageName": true, "ErrImagePull": true, "ImagePullBackOff": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// errPodEnded: the pod's sandbox container ended, or the pod failed.
var errPodEnded = errors.New("the pod ended")

// podStarted reports whether the pod's sandbox container runs, or an error saying why it
// never will.
func podStarted(p *corev1.Pod) (bool, error) {
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil && fatalWaits[w.Reason] {
			return false, fmt.Errorf("container %s cannot start: %s: %s", s.Name, w.Reason, w.Message)
		}
		if t := s.State.Terminated; t != nil && (t.ExitCode != 0 || s.Name == sandboxContainer) {
			return false, fmt.Errorf("%w: container %s ended (%s, exit code %d): %s", errPodEnded, s.Name, t.Reason, t.ExitCode, t.Message)
		}
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("%w: %s: %s %s", errPodEnded, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == sandboxContainer && s.State.Running != nil {
			return true, nil
		}
	}
	return false, nil
}

// describe says where a pod is on its way to running, for a timeout's error.
func describe(p *corev1.Pod) string {
	if p == nil {
		return "not there yet"
	}
	out := string(p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			out += fmt.Sprintf("; %s: %s", c.Type, c.Message)
		}
	}
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil {
			out += fmt.Sprintf("; %s waits: %s %s", s.Name, w.Reason, w.Message)
		}
	}
	return out
}
