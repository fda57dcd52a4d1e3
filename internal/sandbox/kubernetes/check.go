package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentd/agentd/internal/sandbox"
)

// Permission is one verb on one resource that the backend needs in its namespace.
type Permission struct {
	Group, Resource, Subresource string
	Verbs                        []string
}

// Permissions are what the backend does in its namespace, and so what the Role that agentd's
// identity is bound to there must grant. docs/configuration.md lists them.
var Permissions = []Permission{
	{Resource: "pods", Verbs: []string{"create", "get", "list", "watch", "delete"}},
	{Resource: "pods", Subresource: "portforward", Verbs: []string{"create"}},
	{Resource: "secrets", Verbs: []string{"create", "get", "list", "watch", "patch", "delete"}}, // patch: pauses, resumes, the warm pools (pool.go)
	{Resource: "persistentvolumeclaims", Verbs: []string{"create", "get", "delete"}},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verbs: []string{"create", "delete"}},
}

// checkValid is how long a Check that passed is taken to hold: readiness probes call Check
// often, and each full check is a dozen API calls.
const checkValid = time.Minute

// Check implements sandbox.Checker: the API server answers, the namespace exists, and
// agentd may do there all the backend does (Permissions), asked of the API server itself
// with SelfSubjectAccessReviews. A check that passed holds for a minute.
func (b *Backend) Check(ctx context.Context) error {
	b.checkMu.Lock()
	defer b.checkMu.Unlock()
	if !b.checkedAt.IsZero() && time.Since(b.checkedAt) < checkValid {
		return nil
	}
	if err := b.check(ctx); err != nil {
		return err
	}
	b.checkedAt = time.Now()
	return nil
}

func (b *Backend) check(ctx context.Context) error {
	// A dry-run create tells whether the namespace exists without the right to read
	// namespaces, which a Role in it cannot grant.
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "agentd-check-", Namespace: b.ns}}
	err := call(ctx, func(ctx context.Context) error {
		_, err := b.client.CoreV1().Secrets(b.ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return &sandbox.CheckError{Backend: Name, Problem: fmt.Sprintf("the namespace %q does not exist", b.ns), Err: err}
	case apierrors.IsForbidden(err):
		// The reviews below say what is missing.
	case err != nil:
		return &sandbox.CheckError{Backend: Name, Problem: "the cluster's API server does not answer", Err: err}
	}
	var missing []string
	for _, p := range Permissions {
		for _, verb := range p.Verbs {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: b.ns, Verb: verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
				},
			}}
			var got *authorizationv1.SelfSubjectAccessReview
			err := call(ctx, func(ctx context.Context) (err error) {
				got, err = b.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
				return err
			})
			if err != nil {
				return &sandbox.CheckError{Backend: Name, Problem: "the cluster's API server does not answer access reviews", Err: err}
			}
			if !got.Status.Allowed {
				missing = append(missing, verb+" "+p.String())
			}
		}
	}
	if len(missing) > 0 {
		return &sandbox.CheckError{Backend: Name, Problem: fmt.Sprintf("agentd may not %s in the namespace %q (docs/configuration.md lists the Role it needs)",
			strings.Join(missing, ", "), b.ns)}
	}
	return nil
}

func (p Permission) String() string {
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Group != "" {
		r += "." + p.Group
	}
	return r
}
