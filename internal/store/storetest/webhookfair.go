package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/webhook"
)

// hookAt is a webhook of owner's at url.
func hookAt(owner, id, url string, i int) webhook.Webhook {
	w := newWebhook(owner, id, i)
	w.URL = url
	return w
}

func claimedIDs(ds []webhook.Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}

// testWebhookFairClaims: claims interleave the users (each user's first due delivery before
// anyone's second), and never let a user, or an endpoint of a user's, have more attempts
// under way than its cap, counting those claimed before; an attempt recorded frees its place.
func testWebhookFairClaims(t *testing.T, s store.Store) {
	ctx := t.Context()
	ax, ay := hookAt(ownerA, "wh-ax", "https://x.example/hook", 1), hookAt(ownerA, "wh-ay", "http://y.example:8080/hook", 2)
	ax2 := hookAt(ownerA, "wh-ax2", "https://X.example:443/other", 3) // the same endpoint as ax
	b := hookAt(ownerB, "wh-b", "https://x.example/hook", 4)          // the same URL, another user's
	for _, w := range []webhook.Webhook{ax, ay, ax2, b} {
		ok(t, "create webhook", s.CreateWebhook(ctx, w, 5))
	}
	equal(t, "endpoint", webhook.EndpointOf(ax2.URL), webhook.EndpointOf(ax.URL))
	ds := []webhook.Delivery{
		newDelivery(ax, "a-x1", 1), newDelivery(ax2, "a-x2", 2), newDelivery(ax, "a-x3", 3), newDelivery(ax2, "a-x4", 4),
		newDelivery(ay, "a-y1", 6), newDelivery(ay, "a-y2", 7),
		newDelivery(b, "b-1", 8), newDelivery(b, "b-2", 9),
	}
	ok(t, "create deliveries", s.CreateDeliveries(ctx, ds))
	claim := func(limit int) []string {
		t.Helper()
		got, err := s.ClaimDeliveries(ctx, webhook.Claim{Now: at(20), LeaseUntil: at(100), Limit: limit, PerUser: 3, PerEndpoint: 2})
		ok(t, "claim", err)
		for _, d := range got {
			if !d.NextAttemptAt.Equal(at(100)) || d.Endpoint == "" {
				t.Fatalf("claimed %+v, want it leased until at(100), with its endpoint", d)
			}
		}
		return claimedIDs(got)
	}
	// Turns: A's first and B's first, then the seconds, then A's third (its endpoint x is at
	// its cap, so y's).
	equal(t, "first claim", claim(2), []string{"a-x1", "b-1"})
	equal(t, "second claim", claim(10), []string{"a-x2", "b-2", "a-y1"})
	equal(t, "claim at the caps", claim(10), []string{})
	// An attempt recorded frees its place: x has one under way, A two.
	done, err := s.GetDelivery(ctx, ownerA, ax.ID, "a-x1")
	ok(t, "get", err)
	done.Status, done.NextAttemptAt, done.Attempts, done.UpdatedAt = webhook.StatusDelivered, time.Time{}, 1, at(21)
	ok(t, "record", s.UpdateDelivery(ctx, done))
	equal(t, "claim after an attempt", claim(10), []string{"a-x3"})
	// A failed attempt waits for its retry, and frees its place too.
	retry, err := s.GetDelivery(ctx, ownerA, ay.ID, "a-y1")
	ok(t, "get", err)
	retry.Attempts, retry.Error, retry.NextAttemptAt, retry.UpdatedAt = 1, "no answer", at(50), at(21)
	ok(t, "record", s.UpdateDelivery(ctx, retry))
	equal(t, "claim after a failed attempt", claim(10), []string{"a-y2"})
	// Leases that lapsed count no more: at 100 everything unfinished is due and free again.
	got, err := s.ClaimDeliveries(ctx, webhook.Claim{Now: at(100), LeaseUntil: at(200), Limit: 10, PerUser: 3, PerEndpoint: 2})
	ok(t, "claim after the leases", err)
	equal(t, "claimed after the leases", claimedIDs(got), []string{"a-x4", "b-1", "a-y1", "b-2", "a-x2"})
}

// testWebhookEndpointPause: an endpoint that timed out is paused for what the pause function
// says of its count of timeouts in a row, for its user alone; an answer ends the count.
func testWebhookEndpointPause(t *testing.T, s store.Store) {
	ctx := t.Context()
	a, b := hookAt(ownerA, "wh-a", "https://slow.example/a", 1), hookAt(ownerB, "wh-b", "https://slow.example/b", 2)
	ok(t, "create webhook", s.CreateWebhook(ctx, a, 5))
	ok(t, "create webhook", s.CreateWebhook(ctx, b, 5))
	ok(t, "create deliveries", s.CreateDeliveries(ctx, []webhook.Delivery{newDelivery(a, "a-1", 10), newDelivery(b, "b-1", 12)}))
	var counts []int
	pause := func(n int) time.Duration { counts = append(counts, n); return time.Duration(n) * 20 * time.Second }
	endpoint := webhook.EndpointOf(a.URL)
	ok(t, "timed out", s.EndpointTimedOut(ctx, ownerA, endpoint, at(10), pause))
	next, err := s.NextDeliveryAt(ctx)
	ok(t, "next", err)
	equal(t, "next due, A's paused until 30", next, at(12))
	claim := func(now int) []webhook.Delivery {
		t.Helper()
		got, err := s.ClaimDeliveries(ctx, webhook.Claim{Now: at(now), LeaseUntil: at(now + 1), Limit: 5, PerUser: 3, PerEndpoint: 2})
		ok(t, "claim", err)
		return got
	}
	equal(t, "claimed at 20", claimedIDs(claim(20)), []string{"b-1"})
	next, err = s.NextDeliveryAt(ctx)
	ok(t, "next", err)
	equal(t, "next due", next, at(21)) // b-1's lease
	got := claim(30)                   // b-1's lease lapsed at 21
	equal(t, "claimed at 30", claimedIDs(got), []string{"a-1", "b-1"})
	equal(t, "the endpoint's timeouts", got[0].EndpointTimeouts, 1)
	ok(t, "timed out again", s.EndpointTimedOut(ctx, ownerA, endpoint, at(31), pause))
	equal(t, "counts given to pause", counts, []int{1, 2})
	equal(t, "claimed during the second pause", claimedIDs(claim(60)), []string{"b-1"}) // a-1's lease lapsed at 31; paused to 71
	got = claim(71)
	equal(t, "claimed after the second pause", claimedIDs(got), []string{"a-1", "b-1"})
	equal(t, "the endpoint's timeouts", got[0].EndpointTimeouts, 2)
	ok(t, "answered", s.EndpointAnswered(ctx, ownerA, endpoint))
	got = claim(72)
	equal(t, "claimed after the answer", claimedIDs(got), []string{"a-1", "b-1"})
	equal(t, "no timeouts after an answer", got[0].EndpointTimeouts, 0)
	// Pruning drops the pauses that ended before its time.
	ok(t, "timed out", s.EndpointTimedOut(ctx, ownerA, endpoint, at(80), pause))
	_, err = s.PruneDeliveries(ctx, at(1000))
	ok(t, "prune", err)
	got = claim(90)
	equal(t, "claimed after the prune", claimedIDs(got), []string{"a-1", "b-1"})
	equal(t, "no timeouts after the prune", got[0].EndpointTimeouts, 0)
}

// testWebhookCapsConcurrent: claims made at once (by replicas) never pass the caps together,
// nor take a delivery twice.
func testWebhookCapsConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const perUser, perEndpoint, claimers = 3, 2, 8
	owners := []string{ownerA, ownerB, "user-c"}
	var ds []webhook.Delivery
	for _, o := range owners {
		for e := range 2 {
			w := hookAt(o, fmt.Sprintf("wh-%s-%d", o, e), fmt.Sprintf("https://e%d.example/hook", e), e)
			ok(t, "create webhook", s.CreateWebhook(ctx, w, 5))
			for i := range 10 {
				ds = append(ds, newDelivery(w, fmt.Sprintf("d-%s-%d-%d", o, e, i), i))
			}
		}
	}
	ok(t, "create deliveries", s.CreateDeliveries(ctx, ds))
	c := webhook.Claim{Now: at(100), LeaseUntil: at(200), Limit: 2, PerUser: perUser, PerEndpoint: perEndpoint}
	claimed := make([][]webhook.Delivery, claimers)
	errs := race(claimers, func(i int) error {
		for range 20 {
			got, err := s.ClaimDeliveries(ctx, c)
			if err != nil || len(got) == 0 {
				return err
			}
			claimed[i] = append(claimed[i], got...)
		}
		return nil
	})
	winners(t, "claimer", errs, claimers, nil)
	// A claim now finds the rest at the caps.
	rest, err := s.ClaimDeliveries(ctx, c)
	ok(t, "claim after the race", err)
	all := append(slices.Concat(claimed...), rest...)
	seen, perOwner, perEnd := map[string]bool{}, map[string]int{}, map[string]int{}
	for _, d := range all {
		if seen[d.ID] {
			t.Fatalf("%s claimed twice", d.ID)
		}
		seen[d.ID] = true
		perOwner[d.OwnerID]++
		perEnd[d.OwnerID+" "+d.Endpoint]++
	}
	for _, o := range owners {
		if perOwner[o] != perUser {
			t.Errorf("%s has %d under way, want its cap, %d (claimed: %v)", o, perOwner[o], perUser, perOwner)
		}
	}
	for k, n := range perEnd {
		if n > perEndpoint {
			t.Errorf("%s has %d under way, over its cap of %d", k, n, perEndpoint)
		}
	}
	again, err := s.ClaimDeliveries(ctx, c)
	ok(t, "claim at the caps", err)
	equal(t, "claimed at the caps", len(again), 0)
}
