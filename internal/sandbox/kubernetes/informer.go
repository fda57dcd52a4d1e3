package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// informer is the backend's view of its namespace's pods and Secrets that carry its
// installation's labels, kept by client-go's informers: one list of each, then a watch that
// the informers' reflectors take up again, with backoff, after every error (the API server
// restarting, a connection cut), listing anew when the watch cannot resume where it broke.
// Reads of the backend's state (Inspect, List, the pod a connection goes to, the waits for a
// pod to run or to go) come from it and make no call to the API server.
//
// The Secrets are kept without their data (the session key, the runtime's key, the pod's
// manifest): the view needs their labels and annotations only, and keeping fewer secrets in
// memory is better. Resume reads a Secret's data from the API server.
//
// It starts at the first read (New contacts nothing) and stops at Close; a closed backend
// reads from the API server again.
type informer struct {
	once    sync.Once
	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	secrets cache.SharedIndexInformer
	stop    context.CancelFunc

	mu      sync.Mutex
	closed  bool
	waiters map[string]chan struct{} // closed at the next event of an object, by key (kind/name)
	subs    map[int]func(id string)  // WatchChanges' callbacks
	nextSub int
}

// view starts the informers once, under the backend's own lifetime, and returns them.
func (b *Backend) view() *informer {
	w := &b.inf
	w.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		w.stop = cancel
		w.mu.Lock()
		closed := w.closed
		w.mu.Unlock()
		if closed {
			cancel()
			return
		}
		w.factory = informers.NewSharedInformerFactoryWithOptions(b.client, 0,
			informers.WithNamespace(b.ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = b.selector() }),
			informers.WithTransform(slim))
		w.pods = w.factory.Core().V1().Pods().Informer()
		w.secrets = w.factory.Core().V1().Secrets().Informer()
		for _, inf := range []cache.SharedIndexInformer{w.pods, w.secrets} {
			// Errors are retried by the reflector with backoff; they are worth a line in the
			// log, not client-go's own logger's.
			_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
				b.log.Warn("kubernetes watch broke; taking it up again", "resource", r.TypeDescription(), "err", err)
			})
		}
		_, _ = w.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { w.wake("pod", obj) },
			UpdateFunc: func(old, cur any) {
				w.wake("pod", cur)
				if ended(cur) && !ended(old) {
					w.tell(cur)
				}
			},
			DeleteFunc: func(obj any) {
				w.wake("pod", obj)
				w.tell(obj)
			},
		})
		_, _ = w.secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.wake("secret", obj) },
			UpdateFunc: func(_, cur any) { w.wake("secret", cur) },
			DeleteFunc: func(obj any) {
				w.wake("secret", obj)
				w.tell(obj)
			},
		})
		w.factory.StartWithContext(ctx)
	})
	return w
}

// slim drops from an object what the backend's view never reads: its managed fields, and a
// Secret's data.
func slim(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	if s, ok := obj.(*corev1.Secret); ok {
		s.Data, s.StringData = nil, nil
	}
	return obj, nil
}

// ended reports whether obj is a pod whose sandbox will not run any more.
func ended(obj any) bool {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	_, err := podStarted(p)
	return errors.Is(err, errPodEnded)
}

// objectOf returns the object of an event, also of a deletion the informer learned of only by
// listing again.
func objectOf(obj any) (metav1.Object, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(metav1.Object)
	return o, ok
}

// wake wakes whoever waits for an event of the object.
func (w *informer) wake(kind string, obj any) {
	o, ok := objectOf(obj)
	if !ok {
		return
	}
	key := kind + "/" + o.GetName()
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch := w.waiters[key]; ch != nil {
		close(ch)
		delete(w.waiters, key)
	}
}

// next returns a channel closed at the next event of the object kind/name. A waiter takes it
// before it reads the view, so that no event between the read and the wait is missed.
func (w *informer) next(kind, name string) <-chan struct{} {
	key := kind + "/" + name
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiters == nil {
		w.waiters = map[string]chan struct{}{}
	}
	ch := w.waiters[key]
	if ch == nil {
		ch = make(chan struct{})
		w.waiters[key] = ch
	}
	return ch
}

// tell tells WatchChanges' callbacks of a change to the sandbox obj belongs to.
func (w *informer) tell(obj any) {
	o, ok := objectOf(obj)
	if !ok {
		return
	}
	id := o.GetLabels()[labelSandbox]
	if !validID(id) {
		return
	}
	w.mu.Lock()
	subs := make([]func(string), 0, len(w.subs))
	for _, fn := range w.subs {
		subs = append(subs, fn)
	}
	w.mu.Unlock()
	for _, fn := range subs {
		fn(id)
	}
}

// synced returns the informers' view of namespace ns, once each informer has listed its
// objects, starting them if need be; or nil when there is none to read, for another namespace
// or after Close: the caller then asks the API server, as a closed backend still may (a
// sandbox it started is managed by a new one, and the old one's clients keep working).
func (b *Backend) synced(ctx context.Context, ns string) (*informer, error) {
	if ns != b.ns || b.isClosed() {
		return nil, nil
	}
	w := b.view()
	if w.factory == nil {
		return nil, nil
	}
	if w.pods.HasSynced() && w.secrets.HasSynced() {
		return w, nil
	}
	synced := cache.WaitForCacheSync(ctx.Done(), w.pods.HasSynced, w.secrets.HasSynced)
	switch {
	case synced:
		return w, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("wait for the list of the namespace's sandboxes: %w", context.Cause(ctx))
	}
	return nil, nil // closed meanwhile
}

// isClosed reports whether Close was called.
func (b *Backend) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// cachedPod returns the sandbox's pod as the view has it, or nil.
func (w *informer) cachedPod(ns, id string) *corev1.Pod {
	obj, ok, _ := w.pods.GetIndexer().GetByKey(ns + "/" + objectName(id))
	if !ok {
		return nil
	}
	return obj.(*corev1.Pod)
}

// cachedSecret returns the sandbox's Secret, without its data, as the view has it, or nil.
func (w *informer) cachedSecret(ns, id string) *corev1.Secret {
	obj, ok, _ := w.secrets.GetIndexer().GetByKey(ns + "/" + objectName(id))
	if !ok {
		return nil
	}
	return obj.(*corev1.Secret)
}

// WatchChanges implements sandbox.Watcher: it calls changed with the id of a sandbox whose
// pod was removed or ended, or whose Secret was removed, as the watch tells of it, until ctx
// ends or the backend is closed. A change made while the watch was broken is told once it is
// taken up again.
func (b *Backend) WatchChanges(ctx context.Context, changed func(id string)) error {
	w := b.view()
	w.mu.Lock()
	if w.closed || w.factory == nil {
		w.mu.Unlock()
		return nil
	}
	if w.subs == nil {
		w.subs = map[int]func(string){}
	}
	n := w.nextSub
	w.nextSub++
	w.subs[n] = changed
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.subs, n)
		w.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
	case <-b.closed:
	}
	return nil
}

// close stops the informers and waits for them.
func (w *informer) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.once.Do(func() {}) // never start after Close
	if w.stop != nil {
		w.stop()
	}
	if w.factory != nil {
		w.factory.Shutdown()
	}
}
