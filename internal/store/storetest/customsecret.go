package storetest

import (
	"testing"

	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

func testCustomSecrets(t *testing.T, s store.Store) {
	ctx := t.Context()
	all := func(owner string) []customsecret.Secret {
		t.Helper()
		ss, err := s.CustomSecrets(ctx, owner)
		ok(t, "secrets of "+owner, err)
		return ss
	}
	if ss := all(ownerA); len(ss) != 0 {
		t.Fatalf("secrets of a new user: %d, want none", len(ss))
	}
	_, err := s.GetCustomSecret(ctx, ownerA, "API_TOKEN")
	is(t, "get a secret that does not exist", err, customsecret.ErrNotFound)

	token, deploy := newCustomSecret("API_TOKEN", 1), newCustomSecret("DEPLOY_KEY", 2)
	ok(t, "create A's DEPLOY_KEY", s.CreateCustomSecret(ctx, ownerA, deploy, customsecret.MaxPerUser))
	ok(t, "create A's API_TOKEN", s.CreateCustomSecret(ctx, ownerA, token, customsecret.MaxPerUser))
	// Names are unique per user, not across users.
	bToken := newCustomSecret("API_TOKEN", 3)
	bToken.ValueSealed = []byte("B's own value")
	ok(t, "create B's API_TOKEN", s.CreateCustomSecret(ctx, ownerB, bToken, customsecret.MaxPerUser))
	taken := newCustomSecret("API_TOKEN", 4)
	is(t, "create a name A has", s.CreateCustomSecret(ctx, ownerA, taken, customsecret.MaxPerUser), customsecret.ErrExists)
	// Names are case-sensitive, as environment variables are.
	lower := newCustomSecret("api_token", 5)
	ok(t, "create a name differing in case", s.CreateCustomSecret(ctx, ownerA, lower, customsecret.MaxPerUser))
	// By name, byte by byte: upper case before lower case.
	equal(t, "A's secrets, by name", all(ownerA), []customsecret.Secret{token, deploy, lower})
	equal(t, "B's secrets", all(ownerB), []customsecret.Secret{bToken})
	got, err := s.GetCustomSecret(ctx, ownerA, "DEPLOY_KEY")
	ok(t, "get A's DEPLOY_KEY", err)
	equal(t, "A's DEPLOY_KEY", got, deploy)

	// B reaches none of A's secrets.
	_, err = s.GetCustomSecret(ctx, ownerB, "DEPLOY_KEY")
	is(t, "B gets A's secret", err, customsecret.ErrNotFound)
	is(t, "B updates A's secret", s.UpdateCustomSecret(ctx, ownerB, "DEPLOY_KEY", deploy), customsecret.ErrNotFound)
	is(t, "B deletes A's secret", s.DeleteCustomSecret(ctx, ownerB, "DEPLOY_KEY"), customsecret.ErrNotFound)

	// An update replaces description, value and times; a rename moves the secret.
	changed := deploy
	changed.Description, changed.ValueSealed, changed.UpdatedAt = "new description", []byte("new sealed value"), at(6)
	ok(t, "update DEPLOY_KEY", s.UpdateCustomSecret(ctx, ownerA, "DEPLOY_KEY", changed))
	renamed := changed
	renamed.Name = "SSH_KEY"
	ok(t, "rename DEPLOY_KEY", s.UpdateCustomSecret(ctx, ownerA, "DEPLOY_KEY", renamed))
	equal(t, "A's secrets after the rename", all(ownerA), []customsecret.Secret{token, renamed, lower})
	onto := renamed
	onto.Name = "API_TOKEN"
	is(t, "rename onto a taken name", s.UpdateCustomSecret(ctx, ownerA, "SSH_KEY", onto), customsecret.ErrExists)
	is(t, "update a secret that does not exist", s.UpdateCustomSecret(ctx, ownerA, "DEPLOY_KEY", changed), customsecret.ErrNotFound)
	equal(t, "A's secrets after failed updates", all(ownerA), []customsecret.Secret{token, renamed, lower})

	ok(t, "delete SSH_KEY", s.DeleteCustomSecret(ctx, ownerA, "SSH_KEY"))
	is(t, "delete it again", s.DeleteCustomSecret(ctx, ownerA, "SSH_KEY"), customsecret.ErrNotFound)
	equal(t, "A's secrets after the delete", all(ownerA), []customsecret.Secret{token, lower})
	equal(t, "B's secrets at the end", all(ownerB), []customsecret.Secret{bToken})

	// A's two secrets are the limit of 2: a third is refused and not stored, an existing
	// name is ErrExists still, and B, with one, may add one more.
	is(t, "create past the limit", s.CreateCustomSecret(ctx, ownerA, newCustomSecret("THIRD", 7), 2), customsecret.ErrTooMany)
	is(t, "an existing name past the limit", s.CreateCustomSecret(ctx, ownerA, newCustomSecret("API_TOKEN", 7), 2), customsecret.ErrExists)
	equal(t, "A's secrets after refused creations", all(ownerA), []customsecret.Secret{token, lower})
	ok(t, "create B's second of 2", s.CreateCustomSecret(ctx, ownerB, newCustomSecret("B_SECOND", 7), 2))
}

func testCustomSecretPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, name := range []string{"E_KEY", "B_TOKEN", "D_TOKEN", "A_KEY", "C_token"} {
		ok(t, "create "+name, s.CreateCustomSecret(ctx, ownerA, newCustomSecret(name, i), customsecret.MaxPerUser))
	}
	ok(t, "create B's", s.CreateCustomSecret(ctx, ownerB, newCustomSecret("B_ONLY", 9), customsecret.MaxPerUser))
	names := func(contains string, limit int, insert func()) []string {
		t.Helper()
		var out []string
		q := paging.Query{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			ss, next, err := s.ListCustomSecrets(ctx, ownerA, contains, q)
			ok(t, "list secrets", err)
			if len(ss) > limit {
				t.Fatalf("page of %d, limit %d", len(ss), limit)
			}
			for _, sec := range ss {
				out = append(out, sec.Name)
			}
			if next == "" {
				return out
			}
			if pages == 0 && insert != nil {
				insert()
			}
			q.Cursor = next
		}
	}
	equal(t, "all, two a page", names("", 2, nil), []string{"A_KEY", "B_TOKEN", "C_token", "D_TOKEN", "E_KEY"})
	equal(t, "name contains token, any case", names("Token", 1, nil), []string{"B_TOKEN", "C_token", "D_TOKEN"})
	equal(t, "name contains nothing there", names("zzz", 5, nil), []string(nil))
	// A secret created before the cursor never shows; after it, it shows once.
	equal(t, "with inserts between pages", names("", 2, func() {
		ok(t, "create AA", s.CreateCustomSecret(ctx, ownerA, newCustomSecret("AA_EARLY", 10), customsecret.MaxPerUser))
		ok(t, "create F", s.CreateCustomSecret(ctx, ownerA, newCustomSecret("F_LATE", 10), customsecret.MaxPerUser))
	}), []string{"A_KEY", "B_TOKEN", "C_token", "D_TOKEN", "E_KEY", "F_LATE"})
}
