package kubernetes

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/agentd/agentd/internal/sandbox"
)

// Warm pools in the cluster (sandbox.SharedPools). Every replica reaches every pod, so the
// pools live in the cluster, not in a replica's memory, and every change of a member is one
// atomic write the API server refuses when another came first.
//
// A pooled sandbox starts as any other (Start with a PoolSecret): its runtime runs with
// --pooled and its Secret holds the pool's secret where a session key goes, so the secret is
// readable by whichever replica claims (agentd's service account reads the Secrets of its
// namespace; the pod's commands cannot read the mounted file, which is root's). Its objects
// carry an empty owner. Its Secret, the object a sandbox has for all its life, says it is in a
// pool: the label labelPoolState (starting, then ready once its runtime answered), and the
// spec and the spec's digest it started from in annotations.
//
// A claim and a retirement each remove that label with one merge patch of the Secret that
// carries the resourceVersion at which the member was listed: the API server applies a patch
// naming a resourceVersion only while the object is at that version, so of two claims of one
// member (on two replicas, or a claim and a retirement) one applies and the other gets a
// conflict (sandbox.ErrPoolTaken). The claim's patch also writes what the sandbox is from then
// on: its owner, its session key and its pod's manifest as a cold start of the same sandbox
// would have made it (without --pooled, with the spec's environment), which Resume starts
// again after a pause. The running pod keeps the empty owner label it started with, as do its
// volume claim and NetworkPolicy; the Secret, and the pod a resume makes, carry the owner.
// The runtime gets its session key from the service's delivery, not from the Secret: the key
// written there is for a pod that Resume starts later.

// Pool labels and annotations, on a pooled sandbox's Secret.
const (
	labelPoolState       = "agentd.dev/pool-state"  // poolStarting or poolReady; gone once claimed or retired
	annotationPoolSpec   = "agentd.dev/pool-spec"   // the spec's id
	annotationPoolDigest = "agentd.dev/pool-digest" // the spec's digest (StartRequest.PoolDigest)
	annotationRetired    = "agentd.dev/retired"     // taken out of its pool to be destroyed
	poolStarting         = "starting"
	poolReady            = "ready"
)

// secretMeta is the metadata of req's Secret: a pooled one's says which pool it is in.
func (b *Backend) secretMeta(req sandbox.StartRequest) metav1.ObjectMeta {
	m := b.meta(req.ID, req.OwnerID, objectName(req.ID))
	if req.Pooled() {
		m.Labels[labelPoolState] = poolStarting
		m.Annotations[annotationPoolSpec] = req.Pool
		m.Annotations[annotationPoolDigest] = req.PoolDigest
	}
	return m
}

// PoolMembers lists the Secrets that carry labelPoolState, with one labelled list.
func (b *Backend) PoolMembers(ctx context.Context) ([]sandbox.PoolMember, error) {
	var list *corev1.SecretList
	err := call(ctx, func(ctx context.Context) (err error) {
		list, err = b.client.CoreV1().Secrets(b.ns).List(ctx, metav1.ListOptions{LabelSelector: b.selector() + "," + labelPoolState})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list the pooled sandboxes: %w", err)
	}
	out := make([]sandbox.PoolMember, 0, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		m, err := b.member(s)
		if err != nil {
			// Not claimable, but a member: the filler retires it, as one of another spec.
			b.log.Warn("pooled sandbox", "secret", s.Name, "err", err)
		}
		if validID(m.Instance.ID) {
			out = append(out, m)
		}
	}
	return out, nil
}

// member reads a pooled sandbox's Secret.
func (b *Backend) member(s *corev1.Secret) (sandbox.PoolMember, error) {
	id := s.Labels[labelSandbox]
	m := sandbox.PoolMember{
		Instance: sandbox.Instance{ID: id, Endpoint: endpoint(id), State: instanceState{Namespace: s.Namespace}.encode()},
		Ready:    s.Labels[labelPoolState] == poolReady,
		Version:  s.ResourceVersion,
	}
	block, _ := pem.Decode(s.Data[keyCert])
	if block == nil {
		return m, errors.New("no runtime certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return m, fmt.Errorf("the runtime certificate: %w", err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(s.Data[keyPod], &pod); err != nil {
		return m, fmt.Errorf("the pod's manifest: %w", err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == sandboxContainer {
			m.Instance.Workspace = c.WorkingDir
		}
	}
	m.Instance.State = instanceState{Namespace: s.Namespace, Pin: pinOf(cert)}.encode()
	m.Pool, m.Digest = s.Annotations[annotationPoolSpec], s.Annotations[annotationPoolDigest]
	m.Secret = string(s.Data[keySession])
	return m, nil
}

// MarkReady moves the member from starting to ready, at the version it reads.
func (b *Backend) MarkReady(ctx context.Context, inst sandbox.Instance) error {
	if !validID(inst.ID) {
		return fmt.Errorf("mark pooled sandbox ready: %w", errInvalidID(inst.ID))
	}
	ns := b.namespaceOf(inst)
	s, err := b.getSecret(ctx, ns, inst.ID)
	if err != nil {
		return fmt.Errorf("mark pooled sandbox %s ready: %w", inst.ID, err)
	}
	if s == nil || s.Labels[labelPoolState] != poolStarting {
		return fmt.Errorf("mark pooled sandbox %s ready: %w", inst.ID, sandbox.ErrPoolTaken)
	}
	err = b.patchMember(ctx, ns, inst.ID, s.ResourceVersion, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{labelPoolState: poolReady}},
	}, nil)
	if err != nil {
		return fmt.Errorf("mark pooled sandbox %s ready: %w", inst.ID, err)
	}
	return nil
}

// Claim makes m req.OwnerID's, if it is still at the version listed (see above).
func (b *Backend) Claim(ctx context.Context, m sandbox.PoolMember, req sandbox.ClaimRequest) error {
	id := m.Instance.ID
	if !validID(id) {
		return fmt.Errorf("claim pooled sandbox: %w", errInvalidID(id))
	}
	if req.SessionKey == "" {
		return fmt.Errorf("claim pooled sandbox %s: no session key", id)
	}
	manifest, err := json.Marshal(b.pod(sandbox.StartRequest{ID: id, OwnerID: req.OwnerID, Spec: req.Spec, SessionKey: req.SessionKey}))
	if err != nil {
		return fmt.Errorf("claim pooled sandbox %s: %w", id, err)
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"labels": map[string]any{labelPoolState: nil, labelOwner: ownerLabel(req.OwnerID)},
			"annotations": map[string]any{
				annotationOwner: req.OwnerID, annotationPoolSpec: nil, annotationPoolDigest: nil,
			},
		},
		"data": map[string][]byte{keySession: []byte(req.SessionKey), keyPod: manifest},
	}
	// An earlier try whose answer was lost may have applied: the Secret then holds this
	// claim's session key, which no other claim can have written.
	ours := func(s *corev1.Secret) bool {
		return s.Labels[labelPoolState] == "" && subtle.ConstantTimeCompare(s.Data[keySession], []byte(req.SessionKey)) == 1
	}
	if err := b.patchMember(ctx, b.namespaceOf(m.Instance), id, m.Version, patch, ours); err != nil {
		return fmt.Errorf("claim pooled sandbox %s: %w", id, err)
	}
	b.log.Info("pooled sandbox claimed", "sandbox_id", id)
	return nil
}

// Retire takes m out of its pool, if it is still at the version listed.
func (b *Backend) Retire(ctx context.Context, m sandbox.PoolMember) error {
	id := m.Instance.ID
	if !validID(id) {
		return fmt.Errorf("retire pooled sandbox: %w", errInvalidID(id))
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{labelPoolState: nil},
			"annotations": map[string]any{annotationRetired: "true"},
		},
	}
	ours := func(s *corev1.Secret) bool {
		return s.Labels[labelPoolState] == "" && s.Annotations[annotationRetired] == "true"
	}
	if err := b.patchMember(ctx, b.namespaceOf(m.Instance), id, m.Version, patch, ours); err != nil {
		return fmt.Errorf("retire pooled sandbox %s: %w", id, err)
	}
	return nil
}

// patchMember applies patch, a merge patch, to the Secret of sandbox id if it is at version:
// a conflict or a Secret gone is sandbox.ErrPoolTaken. When a retried patch conflicts, ours
// tells whether an earlier try applied it.
func (b *Backend) patchMember(ctx context.Context, ns, id, version string, patch map[string]any, ours func(*corev1.Secret) bool) error {
	patch["metadata"].(map[string]any)["resourceVersion"] = version
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	tries := 0
	err = call(ctx, func(ctx context.Context) error {
		tries++
		_, err := b.client.CoreV1().Secrets(ns).Patch(ctx, objectName(id), types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
	if err == nil {
		return nil
	}
	if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return err
	}
	if tries > 1 && ours != nil {
		if s, gerr := b.getSecret(ctx, ns, id); gerr == nil && s != nil && ours(s) {
			return nil
		}
	}
	return fmt.Errorf("%w: %v", sandbox.ErrPoolTaken, err)
}
