package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/agentd/agentd/internal/sandbox"
)

// namespaceOf is the namespace of inst's objects: its state's, or the backend's for an
// instance without state (a start that failed before the backend answered).
func (b *Backend) namespaceOf(inst sandbox.Instance) string {
	if st, err := decodeState(inst); err == nil && st.Namespace != "" {
		return st.Namespace
	}
	return b.ns
}

// getPod returns the sandbox's pod, or nil if there is none.
func (b *Backend) getPod(ctx context.Context, ns, id string) (*corev1.Pod, error) {
	var p *corev1.Pod
	err := call(ctx, func(ctx context.Context) (err error) {
		p, err = b.client.CoreV1().Pods(ns).Get(ctx, objectName(id), metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return p, err
}

func (b *Backend) getSecret(ctx context.Context, ns, id string) (*corev1.Secret, error) {
	var s *corev1.Secret
	err := call(ctx, func(ctx context.Context) (err error) {
		s, err = b.client.CoreV1().Secrets(ns).Get(ctx, objectName(id), metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

// Inspect: a pod that is on its way or runs is a running sandbox; a pod that ended, no
// Secret, or no pod (or one being removed) while the Secret says it should run, is a sandbox
// gone; no pod while the Secret says it is paused is a paused one. It reads the informers'
// view, and asks the API server only before it answers gone, which the view may say of a
// change it has not caught up with (a pause made by another replica: the Secret's
// annotation, then the pod's removal, can reach the view in the other order).
func (b *Backend) Inspect(ctx context.Context, inst sandbox.Instance) (sandbox.State, error) {
	if !validID(inst.ID) {
		return "", fmt.Errorf("inspect sandbox: %w", errInvalidID(inst.ID))
	}
	ns := b.namespaceOf(inst)
	var state sandbox.State
	w, err := b.synced(ctx, ns)
	if w != nil {
		state = inspect(w.cachedPod(ns, inst.ID), w.cachedSecret(ns, inst.ID))
	}
	if err == nil && (w == nil || state == sandbox.StateGone) {
		var (
			p *corev1.Pod
			s *corev1.Secret
		)
		if p, err = b.getPod(ctx, ns, inst.ID); err == nil {
			if s, err = b.getSecret(ctx, ns, inst.ID); err == nil {
				state = inspect(p, s)
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("inspect sandbox %s: %w", inst.ID, err)
	}
	return state, nil
}

// inspect is the state of a sandbox whose pod and Secret are p and s (nil: none).
func inspect(p *corev1.Pod, s *corev1.Secret) sandbox.State {
	if p != nil && p.DeletionTimestamp == nil {
		if _, err := podStarted(p); errors.Is(err, errPodEnded) {
			return sandbox.StateGone
		}
		return sandbox.StateRunning
	}
	if s == nil || s.Annotations[annotationPod] == podRunning {
		return sandbox.StateGone
	}
	return sandbox.StatePaused
}

// setIntent records in the sandbox's Secret whether its pod should run (annotationPod). A
// Secret gone is no error: so is the sandbox.
func (b *Backend) setIntent(ctx context.Context, ns, id, intent string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, annotationPod, intent)
	err := call(ctx, func(ctx context.Context) error {
		_, err := b.client.CoreV1().Secrets(ns).Patch(ctx, objectName(id), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark the sandbox %s in its secret: %w", intent, err)
	}
	return nil
}

// Pause removes the pod: its processes end, its terminal sessions with them, and its
// workspace stays on its volume, with its Secret, for Resume. It returns once the pod is
// gone. Pausing a paused sandbox does nothing.
func (b *Backend) Pause(ctx context.Context, inst sandbox.Instance) error {
	if !validID(inst.ID) {
		return fmt.Errorf("pause sandbox: %w", errInvalidID(inst.ID))
	}
	ns := b.namespaceOf(inst)
	// The intent first: whoever sees the pod go then knows it was paused, not lost.
	if err := b.setIntent(ctx, ns, inst.ID, podPaused); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	if err := b.deletePod(ctx, ns, inst.ID); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", inst.ID, err)
	}
	b.log.Info("sandbox paused: pod removed", "sandbox_id", inst.ID)
	return nil
}

// Resume starts the sandbox's pod again, from the manifest in its Secret, on the same
// workspace volume, and returns once its container runs. A sandbox whose pod runs is left
// as it is.
func (b *Backend) Resume(ctx context.Context, inst sandbox.Instance) error {
	if !validID(inst.ID) {
		return fmt.Errorf("resume sandbox: %w", errInvalidID(inst.ID))
	}
	ns := b.namespaceOf(inst)
	p, err := b.lookPod(ctx, ns, inst.ID)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	if p != nil && p.DeletionTimestamp == nil {
		if _, err := podStarted(p); !errors.Is(err, errPodEnded) {
			if err := b.setIntent(ctx, ns, inst.ID, podRunning); err != nil {
				return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
			}
			return nil
		}
	}
	if p != nil { // ended, or still being removed by a pause
		if err := b.deletePod(ctx, ns, inst.ID); err != nil {
			return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
		}
	}
	s, err := b.getSecret(ctx, ns, inst.ID)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	if s == nil {
		return fmt.Errorf("resume sandbox %s: its Secret is gone: the sandbox is", inst.ID)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(s.Data[keyPod], &pod); err != nil {
		return fmt.Errorf("resume sandbox %s: the pod's manifest in its Secret: %w", inst.ID, err)
	}
	if err := b.runPod(ctx, &pod); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	if err := b.setIntent(ctx, ns, inst.ID, podRunning); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", inst.ID, err)
	}
	b.log.Info("sandbox resumed: pod started again", "sandbox_id", inst.ID)
	return nil
}

// Destroy removes the pod, the NetworkPolicy, the workspace's claim (and with it, by its
// reclaim policy, the volume) and the Secret, and returns once the pod and the claim are gone.
// What is gone already is no error.
func (b *Backend) Destroy(ctx context.Context, inst sandbox.Instance) error {
	if !validID(inst.ID) {
		return fmt.Errorf("destroy sandbox: %w", errInvalidID(inst.ID))
	}
	if err := b.remove(ctx, b.namespaceOf(inst), inst.ID); err != nil {
		return fmt.Errorf("destroy sandbox %s: %w", inst.ID, err)
	}
	return nil
}

// remove deletes every object of sandbox id in ns and waits for the pod and the claim to go.
func (b *Backend) remove(ctx context.Context, ns, id string) error {
	if err := b.deletePod(ctx, ns, id); err != nil {
		return err
	}
	gone := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	name := objectName(id)
	if err := call(ctx, func(ctx context.Context) error {
		return gone(b.client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	}); err != nil {
		return fmt.Errorf("delete the network policy: %w", err)
	}
	if err := call(ctx, func(ctx context.Context) error {
		return gone(b.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claimName(id), metav1.DeleteOptions{}))
	}); err != nil {
		return fmt.Errorf("delete the workspace volume claim: %w", err)
	}
	if err := call(ctx, func(ctx context.Context) error {
		return gone(b.client.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	}); err != nil {
		return fmt.Errorf("delete the secret: %w", err)
	}
	// Out of the view too, so that an Inspect after Destroy finds the sandbox gone.
	if err := b.awaitGone(ctx, ns, kindSecret, name, func(ctx context.Context) error {
		_, err := b.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	// The claim goes once no pod uses it (its protection finalizer), which is now.
	return waitGone(ctx, "the workspace volume claim", func(ctx context.Context) error {
		_, err := b.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claimName(id), metav1.GetOptions{})
		return err
	})
}

// deletePod deletes the sandbox's pod with a grace period of a second and waits until it is
// gone. Not none: a pod deleted without grace leaves the API server at once while the kubelet
// still stops its containers; with one, the kubelet removes the pod only once its containers
// have ended and its volumes are released, so that when deletePod returns, no process of the
// sandbox runs and the workspace's volume is free for the next pod.
func (b *Backend) deletePod(ctx context.Context, ns, id string) error {
	grace := int64(1)
	err := call(ctx, func(ctx context.Context) error {
		return b.client.CoreV1().Pods(ns).Delete(ctx, objectName(id), metav1.DeleteOptions{GracePeriodSeconds: &grace})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete the pod: %w", err)
	}
	return b.awaitGone(ctx, ns, kindPod, objectName(id), func(ctx context.Context) error {
		_, err := b.client.CoreV1().Pods(ns).Get(ctx, objectName(id), metav1.GetOptions{})
		return err
	})
}

// Kinds of the objects in the informers' view.
const (
	kindPod    = "pod"
	kindSecret = "secret"
)

// awaitGone waits until the object kind/name is gone: out of the informers' view, woken by
// its events, and then, asked once with get, from the API server (the view may not have seen
// it yet). Without a view (another namespace, a closed backend) it asks get until it answers
// NotFound.
func (b *Backend) awaitGone(ctx context.Context, ns, kind, name string, get func(context.Context) error) error {
	w, err := b.synced(ctx, ns)
	if err != nil {
		return fmt.Errorf("wait for the %s to go: %w", kind, err)
	}
	if w == nil {
		return waitGone(ctx, "the "+kind, get)
	}
	store := w.pods.GetStore()
	if kind == kindSecret {
		store = w.secrets.GetStore()
	}
	for {
		next := w.next(kind, name)
		if _, there, _ := store.GetByKey(ns + "/" + name); !there {
			err := call(ctx, get)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("wait for the %s to go: %w", kind, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the %s to go: %w", kind, context.Cause(ctx))
		case <-b.closed: // no more events: ask the API server
			return waitGone(ctx, "the "+kind, get)
		case <-next:
		}
	}
}

// waitGone calls get until it answers NotFound, or ctx ends.
func waitGone(ctx context.Context, what string, get func(context.Context) error) error {
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		err := call(ctx, get)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("wait for %s to go: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to go: %w", what, context.Cause(ctx))
		case <-time.After(delay):
		}
	}
}

// List finds this installation's sandboxes in the informers' view of the Secrets: the one
// object a sandbox has for all its life (its pod goes at a pause). It makes no call to the
// API server once the view is there (a closed backend lists with one).
func (b *Backend) List(ctx context.Context) ([]sandbox.Instance, error) {
	w, err := b.synced(ctx, b.ns)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var secrets []*corev1.Secret
	if w != nil {
		for _, obj := range w.secrets.GetStore().List() {
			secrets = append(secrets, obj.(*corev1.Secret))
		}
	} else {
		var list *corev1.SecretList
		err := call(ctx, func(ctx context.Context) (err error) {
			list, err = b.client.CoreV1().Secrets(b.ns).List(ctx, metav1.ListOptions{LabelSelector: b.selector()})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list sandboxes: %w", err)
		}
		for i := range list.Items {
			secrets = append(secrets, &list.Items[i])
		}
	}
	out := make([]sandbox.Instance, 0, len(secrets))
	for _, s := range secrets {
		id := s.Labels[labelSandbox]
		if !validID(id) || s.Name != objectName(id) {
			continue
		}
		out = append(out, sandbox.Instance{ID: id, Endpoint: endpoint(id), State: instanceState{Namespace: b.ns}.encode()})
	}
	slices.SortFunc(out, func(a, b sandbox.Instance) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// lookPod returns the sandbox's pod, or nil: from the informers' view, or from the API
// server where there is none.
func (b *Backend) lookPod(ctx context.Context, ns, id string) (*corev1.Pod, error) {
	w, err := b.synced(ctx, ns)
	if err != nil {
		return nil, err
	}
	if w == nil {
		return b.getPod(ctx, ns, id)
	}
	return w.cachedPod(ns, id), nil
}
