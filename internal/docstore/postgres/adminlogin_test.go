package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// openAsAdminLogin returns a store on dsn's database that acts as a fresh role holding exactly
// GrantAdminLogin's privileges, as the admin API's login does.
func openAsAdminLogin(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	ctx := context.Background()
	su, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	var db, owner string
	if err := su.QueryRow(ctx, "SELECT current_database(), current_user").Scan(&db, &owner); err != nil {
		t.Fatal(err)
	}
	role := "adm_" + db
	if _, err := su.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" NOLOGIN NOSUPERUSER NOBYPASSRLS"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.GrantAdminLogin(ctx, su, db, owner, role); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET ROLE "+pgx.Identifier{role}.Sanitize())
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := postgres.New(ctx, pool, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func TestAdminLoginInsertsOnlyPendingMaintenanceRequests(t *testing.T) {
	ctx := context.Background()
	owner, dsn := open(t, postgres.Options{})
	admin := openAsAdminLogin(t, dsn)

	doc := func(partition, id, typ, body string) *docstore.Document {
		return &docstore.Document{PartitionKey: partition, ID: id, Type: typ, ResourceID: id, Body: []byte(body)}
	}
	const sub = "0b5f0a4e-8d8e-4a52-9d1e-6f0e7a1c2b3d"
	customer, err := owner.Create(ctx, doc(sub, "cluster-1", docstore.TypeResource, `{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	campaign, err := owner.Create(ctx, doc("openhcp-maintenance", "campaign/z1", "maintenance-campaign", `{"state":"Running"}`))
	if err != nil {
		t.Fatal(err)
	}
	request, err := admin.Create(ctx, doc(postgres.MaintenanceRequestPartition, "request/r1", postgres.MaintenanceRequestType, `{"state":"Pending"}`))
	if err != nil {
		t.Fatalf("the admin login may insert a pending maintenance request: %v", err)
	}
	if got, err := owner.Get(ctx, postgres.MaintenanceRequestPartition, "request/r1"); err != nil || string(got.Body) != `{"state": "Pending"}` {
		t.Fatalf("the request as stored: %v %v", got, err)
	}

	refusedInserts := []struct {
		name string
		doc  *docstore.Document
	}{
		{"another_type_in_the_request_partition", doc(postgres.MaintenanceRequestPartition, "request/r2", "maintenance-campaign", `{"state":"Pending"}`)},
		{"a_request_in_another_partition", doc("openhcp-maintenance", "request/r3", postgres.MaintenanceRequestType, `{"state":"Pending"}`)},
		{"a_request_already_done", doc(postgres.MaintenanceRequestPartition, "request/r4", postgres.MaintenanceRequestType, `{"state":"Done"}`)},
		{"a_request_without_a_state", doc(postgres.MaintenanceRequestPartition, "request/r5", postgres.MaintenanceRequestType, `{}`)},
		{"a_maintenance_campaign", doc("openhcp-maintenance", "campaign/z2", "maintenance-campaign", `{"state":"Running"}`)},
		{"a_customer_resource", doc(sub, "cluster-2", "Microsoft.RedHatOpenShift/hcpOpenShiftClusters", `{"n":1}`)},
		{"a_leader_lease", doc("openhcp-leases", "maintenance-campaigns", "lease", `{}`)},
	}
	for _, c := range refusedInserts {
		t.Run("refuses_to_insert_"+c.name, func(t *testing.T) {
			if _, err := admin.Create(ctx, c.doc); err == nil || !strings.Contains(err.Error(), "violates row-level security policy") {
				t.Fatalf("admin login inserted %s/%s (%s): %v", c.doc.PartitionKey, c.doc.ID, c.doc.Type, err)
			}
			if _, err := owner.Get(ctx, c.doc.PartitionKey, c.doc.ID); !errors.Is(err, docstore.ErrNotFound) {
				t.Fatalf("%s/%s is stored after the refused insert: %v", c.doc.PartitionKey, c.doc.ID, err)
			}
		})
	}

	refusedUpdates := []struct {
		name string
		doc  *docstore.Document
	}{
		{"its_own_request_to_mark_it_done", request},
		{"a_maintenance_campaign", campaign},
	}
	for _, c := range refusedUpdates {
		t.Run("refuses_to_update_"+c.name, func(t *testing.T) {
			next := *c.doc
			next.Body = []byte(`{"state":"Done"}`)
			if _, err := admin.Replace(ctx, &next, c.doc.ETag); err == nil {
				t.Fatalf("admin login replaced %s/%s", c.doc.PartitionKey, c.doc.ID)
			}
			got, err := owner.Get(ctx, c.doc.PartitionKey, c.doc.ID)
			if err != nil || got.ETag != c.doc.ETag {
				t.Fatalf("%s/%s changed after the refused update: %v %v", c.doc.PartitionKey, c.doc.ID, got, err)
			}
		})
	}
	t.Run("refuses_to_delete_a_request", func(t *testing.T) {
		if err := admin.Delete(ctx, request.PartitionKey, request.ID, request.ETag); err == nil {
			t.Fatal("admin login deleted its request")
		}
		if _, err := owner.Get(ctx, request.PartitionKey, request.ID); err != nil {
			t.Fatalf("the request after the refused delete: %v", err)
		}
	})
	t.Run("still_updates_a_customer_resource_for_day_2_changes", func(t *testing.T) {
		next := *customer
		next.Body = []byte(`{"n":2}`)
		if _, err := admin.Replace(ctx, &next, customer.ETag); err != nil {
			t.Fatalf("day-2 update of a customer resource: %v", err)
		}
		if got, err := owner.Get(ctx, sub, "cluster-1"); err != nil || !strings.Contains(string(got.Body), `2`) {
			t.Fatalf("customer resource after the update: %v %v", got, err)
		}
	})
	t.Run("reads_every_document", func(t *testing.T) {
		for _, d := range []*docstore.Document{customer, campaign, request} {
			if _, err := admin.Get(ctx, d.PartitionKey, d.ID); err != nil {
				t.Fatal(fmt.Errorf("read %s/%s: %w", d.PartitionKey, d.ID, err))
			}
		}
	})
}

// An update the admin login may make (a customer's resource document, for a day-2 change) must
// not do what its missing DELETE grant forbids or move the document to another resource: an
// expiry makes the owners' purger delete the document, another resource ID or type files it
// under another customer's resource (resource ID prefix queries cross partitions), and a
// position chosen by the writer hides the change from the feed or collides with a later write.
func TestAdminLoginUpdateKeepsDocumentIdentity(t *testing.T) {
	ctx := context.Background()
	owner, dsn := open(t, postgres.Options{})
	admin := openAsAdminLogin(t, dsn)
	const sub = "0b5f0a4e-8d8e-4a52-9d1e-6f0e7a1c2b3d"
	const rid = "/subscriptions/" + sub + "/resourcegroups/rg/providers/microsoft.redhatopenshift/hcpopenshiftclusters/c1"
	const typ = docstore.TypeResource
	customer, err := owner.Create(ctx, &docstore.Document{PartitionKey: sub, ID: "cluster-1", Type: typ, ResourceID: rid, Body: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		name   string
		change func(d *docstore.Document)
	}{
		{"an_expiry_that_would_have_the_purger_delete_it", func(d *docstore.Document) { d.TTL = time.Millisecond }},
		{"another_customers_resource_id", func(d *docstore.Document) {
			d.ResourceID = "/subscriptions/11111111-2222-3333-4444-555555555555/resourcegroups/rg/providers/microsoft.redhatopenshift/hcpopenshiftclusters/c1"
		}},
		{"another_type", func(d *docstore.Document) { d.Type = docstore.TypeSubscription }},
	}
	for _, c := range refused {
		t.Run("refuses_"+c.name, func(t *testing.T) {
			next := *customer
			next.Body = []byte(`{"n":2}`)
			c.change(&next)
			if _, err := admin.Replace(ctx, &next, customer.ETag); err == nil {
				t.Fatalf("admin login replaced %s/%s with %s", sub, customer.ID, c.name)
			}
			got, err := owner.Get(ctx, sub, customer.ID)
			if err != nil || got.ETag != customer.ETag || !got.ExpiresAt.IsZero() || got.ResourceID != rid || got.Type != typ {
				t.Fatalf("%s/%s changed after the refused update: %+v %v", sub, customer.ID, got, err)
			}
		})
	}
	t.Run("refuses_a_feed_position_of_its_own_choosing", func(t *testing.T) {
		_, err := admin.Pool().Exec(ctx, "UPDATE documents SET body = '{\"n\":3}', seq = 1000000 WHERE partition_key = $1 AND id = $2", sub, customer.ID)
		if err == nil {
			t.Fatal("admin login set the document's feed position to 1000000")
		}
		got, err := owner.Get(ctx, sub, customer.ID)
		if err != nil || got.Seq != customer.Seq {
			t.Fatalf("%s/%s after the refused update: %+v %v", sub, customer.ID, got, err)
		}
	})
	t.Run("refuses_to_insert_a_request_at_a_feed_position_of_its_own_choosing", func(t *testing.T) {
		// A session that has not drawn from the sequence (DISCARD SEQUENCES): the refusal must be
		// the permission error, not a side effect of the guard's own lookup.
		conn, err := admin.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		if _, err := conn.Exec(ctx, "DISCARD SEQUENCES"); err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, `INSERT INTO documents (partition_key, id, type, resource_id, body, etag, seq)
VALUES ($1, 'request/seq', $2, 'request/seq', '{"state":"Pending"}', 'e', 1000000)`, postgres.MaintenanceRequestPartition, postgres.MaintenanceRequestType)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Fatalf("admin login inserting a request at feed position 1000000 in a fresh session: %v, want permission denied (42501)", err)
		}
		if _, err := owner.Get(ctx, postgres.MaintenanceRequestPartition, "request/seq"); !errors.Is(err, docstore.ErrNotFound) {
			t.Fatalf("the request after the refused insert: %v", err)
		}
	})
	t.Run("still_makes_a_day_2_change", func(t *testing.T) {
		next := *customer
		next.Body = []byte(`{"n":4}`)
		out, err := admin.Replace(ctx, &next, customer.ETag)
		if err != nil {
			t.Fatalf("day-2 update of a customer resource: %v", err)
		}
		got, err := owner.Get(ctx, sub, customer.ID)
		if err != nil || !strings.Contains(string(got.Body), "4") || got.Seq != out.Seq || got.Seq <= customer.Seq {
			t.Fatalf("customer resource after the update: %+v %v (written %+v)", got, err, out)
		}
	})
}

// The admin login's day-2 changes are written into a customer's resource document (a cluster or
// node pool); a subscription's document (its ARM registration state) and an operation's (what
// ARM polls) are the frontend's and backend's to write, so the admin login may not update them.
func TestAdminLoginUpdatesOnlyResourceDocuments(t *testing.T) {
	ctx := context.Background()
	owner, dsn := open(t, postgres.Options{})
	admin := openAsAdminLogin(t, dsn)
	const sub = "0b5f0a4e-8d8e-4a52-9d1e-6f0e7a1c2b3d"
	for _, c := range []struct {
		name, id, typ, body, forged string
		refused                     bool
	}{
		{"refuses_to_register_a_suspended_subscription", "subscription", docstore.TypeSubscription, `{"state":"Suspended"}`, `{"state":"Registered"}`, true},
		{"refuses_to_mark_an_operation_succeeded", "op-1", docstore.TypeOperation, `{"status":"InProgress"}`, `{"status":"Succeeded"}`, true},
		{"updates_a_resource_document", "cluster-1", docstore.TypeResource, `{"n":1}`, `{"n":2}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := owner.Create(ctx, &docstore.Document{PartitionKey: sub, ID: c.id, Type: c.typ, ResourceID: c.id, Body: []byte(c.body)})
			if err != nil {
				t.Fatal(err)
			}
			next := *d
			next.Body = []byte(c.forged)
			_, err = admin.Replace(ctx, &next, d.ETag)
			if c.refused != (err != nil) {
				t.Fatalf("admin login's replace of the %s document: %v (want refused: %v)", c.typ, err, c.refused)
			}
			got, err := owner.Get(ctx, sub, c.id)
			if err != nil {
				t.Fatal(err)
			}
			if changed := got.ETag != d.ETag; changed == c.refused {
				t.Fatalf("the %s document after the admin login's replace: %s (changed %v)", c.typ, got.Body, changed)
			}
		})
	}
}
