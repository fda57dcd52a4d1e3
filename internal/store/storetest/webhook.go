package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/webhook"
)

func newWebhook(owner, id string, i int) webhook.Webhook {
	return webhook.Webhook{ID: id, OwnerID: owner, URL: "https://hooks.example.com/" + id,
		Kinds: []string{webhook.KindConversationFinished, webhook.KindConversationError}, Description: "hook " + id,
		SecretSealed: []byte("sealed secret of " + id), CreatedAt: at(i)}
}

func newDelivery(w webhook.Webhook, id string, i int) webhook.Delivery {
	return webhook.Delivery{ID: id, WebhookID: w.ID, OwnerID: w.OwnerID, Kind: webhook.KindConversationFinished, Endpoint: webhook.EndpointOf(w.URL),
		Payload: []byte(`{"id":"` + id + `","event":"conversation.finished","data":{}}`), Status: webhook.StatusPending,
		CreatedAt: at(i), UpdatedAt: at(i), NextAttemptAt: at(i), RetryUntil: at(i + 3600)}
}

func testWebhooks(t *testing.T, s store.Store) {
	ctx := t.Context()
	a1, a2 := newWebhook(ownerA, "wh-a1", 2), newWebhook(ownerA, "wh-a2", 1)
	a2.ConversationID, a2.Kinds = "conv-1", []string{webhook.KindAll}
	b1 := newWebhook(ownerB, "wh-b1", 3)
	for _, w := range []webhook.Webhook{a1, a2, b1} {
		ok(t, "create "+w.ID, s.CreateWebhook(ctx, w, 3))
	}
	got, err := s.ListWebhooks(ctx, ownerA)
	ok(t, "list A's", err)
	equal(t, "A's webhooks, oldest first", got, []webhook.Webhook{a2, a1})
	g, err := s.GetWebhook(ctx, ownerA, a2.ID)
	ok(t, "get", err)
	equal(t, "a2", g, a2)
	_, err = s.GetWebhook(ctx, ownerB, a1.ID)
	is(t, "B gets A's webhook", err, webhook.ErrNotFound)
	is(t, "B deletes A's webhook", s.DeleteWebhook(ctx, ownerB, a1.ID), webhook.ErrNotFound)

	// The limit counts the owner's webhooks only.
	ok(t, "A's third", s.CreateWebhook(ctx, newWebhook(ownerA, "wh-a3", 4), 3))
	is(t, "A's fourth", s.CreateWebhook(ctx, newWebhook(ownerA, "wh-a4", 5), 3), webhook.ErrLimit)
	if ws, _ := s.ListWebhooks(ctx, ownerA); len(ws) != 3 {
		t.Fatalf("a refused webhook was stored: %d webhooks", len(ws))
	}

	// Deleting a webhook deletes its deliveries.
	ok(t, "delivery", s.CreateDeliveries(ctx, []webhook.Delivery{newDelivery(a1, "d-1", 5)}))
	ok(t, "delete a1", s.DeleteWebhook(ctx, ownerA, a1.ID))
	_, err = s.GetWebhook(ctx, ownerA, a1.ID)
	is(t, "get a deleted webhook", err, webhook.ErrNotFound)
	_, err = s.GetDelivery(ctx, ownerA, a1.ID, "d-1")
	is(t, "a deleted webhook's delivery", err, webhook.ErrNotFound)
	next, err := s.NextDeliveryAt(ctx)
	ok(t, "next delivery", err)
	if !next.IsZero() {
		t.Fatalf("a deleted webhook's delivery is still due at %v", next)
	}
	is(t, "a delivery for a webhook that is gone", s.CreateDeliveries(ctx, []webhook.Delivery{newDelivery(a1, "d-2", 6)}), webhook.ErrNotFound)
}

func testWebhookDeliveries(t *testing.T, s store.Store) {
	ctx := t.Context()
	w, other := newWebhook(ownerA, "wh-1", 1), newWebhook(ownerA, "wh-2", 1)
	ok(t, "create", s.CreateWebhook(ctx, w, 5))
	ok(t, "create", s.CreateWebhook(ctx, other, 5))
	var ds []webhook.Delivery
	for i := range 5 {
		ds = append(ds, newDelivery(w, fmt.Sprintf("d-%d", i), 10+i))
	}
	ok(t, "create deliveries", s.CreateDeliveries(ctx, append(ds, newDelivery(other, "o-1", 30))))

	// An update writes the outcome; a delivered one has no next attempt.
	done := ds[1]
	done.Status, done.Attempts, done.ResponseCode, done.UpdatedAt, done.NextAttemptAt = webhook.StatusDelivered, 1, 204, at(40), time.Time{}
	ok(t, "update", s.UpdateDelivery(ctx, done))
	failed := ds[2]
	failed.Status, failed.Attempts, failed.Error, failed.UpdatedAt, failed.NextAttemptAt = webhook.StatusFailed, 3, "no answer within 10s", at(41), time.Time{}
	ok(t, "update", s.UpdateDelivery(ctx, failed))
	got, err := s.GetDelivery(ctx, ownerA, w.ID, done.ID)
	ok(t, "get", err)
	equal(t, "delivered", got, done)
	_, err = s.GetDelivery(ctx, ownerB, w.ID, done.ID)
	is(t, "B gets A's delivery", err, webhook.ErrNotFound)
	_, err = s.GetDelivery(ctx, ownerA, other.ID, done.ID)
	is(t, "a delivery under another webhook", err, webhook.ErrNotFound)
	stranger := done
	stranger.OwnerID = ownerB
	is(t, "B updates A's delivery", s.UpdateDelivery(ctx, stranger), webhook.ErrNotFound)

	// Newest first, in pages, filtered by status.
	var all []webhook.Delivery
	q := paging.Query{Limit: 2}
	for {
		page, next, err := s.ListDeliveries(ctx, ownerA, w.ID, "", q)
		ok(t, "list", err)
		all = append(all, page...)
		if next == "" {
			break
		}
		q.Cursor = next
	}
	want := []webhook.Delivery{ds[4], ds[3], failed, done, ds[0]}
	equal(t, "deliveries, newest first", all, want)
	pending, _, err := s.ListDeliveries(ctx, ownerA, w.ID, webhook.StatusPending, paging.Query{})
	ok(t, "list pending", err)
	equal(t, "pending deliveries", pending, []webhook.Delivery{ds[4], ds[3], ds[0]})
	none, _, err := s.ListDeliveries(ctx, ownerB, w.ID, "", paging.Query{})
	ok(t, "B lists A's", err)
	if len(none) != 0 {
		t.Fatalf("B lists %d of A's deliveries", len(none))
	}

	// Pruning removes finished deliveries updated before the bound, never pending ones.
	n, err := s.PruneDeliveries(ctx, at(41))
	ok(t, "prune", err)
	if n != 1 {
		t.Fatalf("pruned %d, want 1 (the delivered one)", n)
	}
	_, err = s.GetDelivery(ctx, ownerA, w.ID, done.ID)
	is(t, "a pruned delivery", err, webhook.ErrNotFound)
	_, err = s.GetDelivery(ctx, ownerA, w.ID, ds[0].ID)
	ok(t, "a pending delivery survives pruning", err)
}

func testWebhookClaims(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := newWebhook(ownerA, "wh-1", 1)
	ok(t, "create", s.CreateWebhook(ctx, w, 5))
	d1, d2, d3 := newDelivery(w, "d-1", 10), newDelivery(w, "d-2", 11), newDelivery(w, "d-3", 50)
	ok(t, "create deliveries", s.CreateDeliveries(ctx, []webhook.Delivery{d3, d2, d1}))
	next, err := s.NextDeliveryAt(ctx)
	ok(t, "next", err)
	equal(t, "next due", next, at(10))

	// At 20 two are due; a claim of one takes the earliest and leases it until 30.
	got, err := s.ClaimDeliveries(ctx, webhook.Claim{Now: at(20), LeaseUntil: at(30), Limit: 1})
	ok(t, "claim", err)
	if len(got) != 1 || got[0].ID != d1.ID || !got[0].NextAttemptAt.Equal(at(30)) {
		t.Fatalf("claimed %+v, want d-1 leased until at(30)", got)
	}
	got, err = s.ClaimDeliveries(ctx, webhook.Claim{Now: at(20), LeaseUntil: at(30), Limit: 5})
	ok(t, "claim again", err)
	if len(got) != 1 || got[0].ID != d2.ID {
		t.Fatalf("second claim %+v, want d-2 alone (d-1 is leased, d-3 not due)", got)
	}
	got, err = s.ClaimDeliveries(ctx, webhook.Claim{Now: at(25), LeaseUntil: at(35), Limit: 5})
	ok(t, "claim while leased", err)
	if len(got) != 0 {
		t.Fatalf("claimed leased deliveries: %+v", got)
	}
	// A lease that lapses (its process died mid-attempt) makes the delivery due again.
	got, err = s.ClaimDeliveries(ctx, webhook.Claim{Now: at(30), LeaseUntil: at(40), Limit: 5})
	ok(t, "claim after the lease", err)
	if len(got) != 2 {
		t.Fatalf("after the leases lapsed, claimed %d, want 2", len(got))
	}
	// A finished delivery is never claimed.
	d := got[0]
	d.Status, d.NextAttemptAt, d.Attempts, d.UpdatedAt = webhook.StatusDelivered, time.Time{}, 1, at(31)
	ok(t, "deliver", s.UpdateDelivery(ctx, d))
	got, err = s.ClaimDeliveries(ctx, webhook.Claim{Now: at(60), LeaseUntil: at(70), Limit: 5})
	ok(t, "claim at 60", err)
	if len(got) != 2 || got[0].ID == d.ID || got[1].ID == d.ID {
		t.Fatalf("claimed at 60: %+v, want the two still pending", got)
	}
}
