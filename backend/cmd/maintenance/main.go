// Command maintenance is the region's maintenance service: every replica runs the actuator,
// which claims maintenance tasks from the document store and runs their steps against Cluster
// Service, and the replica holding the maintenance lease moves campaigns through their waves
// (docs/maintenance.md). It calls Cluster Service as the maintenance workload, which may call
// only what the task types need (cluster-service/pkg/authz).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/openhcp/openhcp/backend/pkg/leader"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/internal/csclient"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/pkirotation"
	"github.com/openhcp/openhcp/internal/svcmain"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// campaignLease is the leader lease's document ID: one replica moves campaigns at a time.
const campaignLease = "maintenance-campaigns"

type options struct {
	store          storeconfig.Flags
	clusterService string
	csTLS          tlsconfig.Files
	metricsListen  string
	metricsTLS     tlsconfig.Files
	replicaID      string
	maxInFlight    int
	taskLease      time.Duration
	poll           time.Duration
	campaignPoll   time.Duration
	requestPoll    time.Duration
	upgradePoll    time.Duration
	logLevel       string
	statementPub   string
	blackoutsJSON  string
	blackouts      []maintenance.Blackout
	regionPKI      string
}

// parseFlags reads flags, each defaulting to its environment variable. Errors name the flag.
func parseFlags(args []string, getenv func(string) string) (*options, error) {
	fs := svcmain.NewFlags("maintenance", getenv)
	o := &options{}
	o.store.Register(fs.FlagSet, "MAINTENANCE", getenv)
	str := fs.String
	str(&o.clusterService, "cluster-service", "MAINTENANCE_CLUSTER_SERVICE", "127.0.0.1:8090", "Cluster Service gRPC address")
	str(&o.csTLS.CA, "cluster-service-ca", "MAINTENANCE_CLUSTER_SERVICE_CA", "", "CA file that verifies Cluster Service; with the cert flags enables TLS")
	str(&o.csTLS.Cert, "cluster-service-cert", "MAINTENANCE_CLUSTER_SERVICE_CERT", "", "client certificate for Cluster Service (the maintenance identity; re-read when it changes)")
	str(&o.csTLS.Key, "cluster-service-key", "MAINTENANCE_CLUSTER_SERVICE_KEY", "", "client key for Cluster Service")
	str(&o.metricsListen, "metrics-listen", "MAINTENANCE_METRICS_LISTEN", "127.0.0.1:8084", "address of /metrics and /healthz: plaintext on loopback, elsewhere TLS with --tls-cert")
	str(&o.metricsTLS.Cert, "tls-cert", "MAINTENANCE_TLS_CERT", "", "server certificate (PEM) of --metrics-listen; required when that address is not loopback")
	str(&o.metricsTLS.Key, "tls-key", "MAINTENANCE_TLS_KEY", "", "server key (PEM) of --metrics-listen")
	str(&o.replicaID, "replica-id", "MAINTENANCE_REPLICA_ID", svcmain.ReplicaID("maintenance"), "this replica's name in the tasks it runs and in the campaign lease (default hostname-pid)")
	str(&o.logLevel, "log-level", "MAINTENANCE_LOG_LEVEL", "info", "debug, info, warn or error")
	str(&o.regionPKI, "region-pki", "MAINTENANCE_REGION_PKI", "", "host:port of the region PKI holder's rotation API (the region-certificate-rotation task type), called with the --cluster-service-* files; empty: this region has none, and such a task fails saying so")
	str(&o.statementPub, "sre-statement-public-key", "MAINTENANCE_SRE_STATEMENT_PUBLIC_KEY", "",
		"Ed25519 public key (PKIX PEM) of the admin API's --sre-statement-key: an SRE's maintenance request is carried out only if it verifies (required)")
	str(&o.blackoutsJSON, "blackouts", "MAINTENANCE_BLACKOUTS", "",
		`the region's blackouts, in which no task starts: a JSON list of {"from","to","reason"} (RFC 3339 times, [from, to)); empty: none`)
	fs.IntVar(&o.maxInFlight, "max-in-flight", 4, "tasks running at once across every replica; the same on every replica")
	fs.Duration(&o.taskLease, "task-lease", "MAINTENANCE_TASK_LEASE", 30*time.Second, "a running task whose replica has not written it for this long is resumed by another; a step must return within half of it")
	fs.Duration(&o.poll, "poll", "MAINTENANCE_POLL", time.Second, "how often runnable tasks are looked for")
	fs.Duration(&o.campaignPoll, "campaign-poll", "MAINTENANCE_CAMPAIGN_POLL", 5*time.Second, "how often running campaigns are moved on")
	fs.Duration(&o.requestPoll, "request-poll", "MAINTENANCE_REQUEST_POLL", time.Second, "how often SREs' maintenance requests (from the admin API) are looked for")
	fs.Duration(&o.upgradePoll, "upgrade-poll", "MAINTENANCE_UPGRADE_POLL", 5*time.Second, "how often a running control-plane or node pool upgrade is looked at")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := o.store.Validate(); err != nil {
		return nil, err
	}
	if err := svcmain.HostPorts(svcmain.Address{Value: o.clusterService, Flag: "cluster-service"}, svcmain.Address{Value: o.metricsListen, Flag: "metrics-listen"}); err != nil {
		return nil, err
	}
	if o.regionPKI != "" {
		if err := svcmain.HostPorts(svcmain.Address{Value: o.regionPKI, Flag: "region-pki"}); err != nil {
			return nil, err
		}
		if o.csTLS.CA == "" || o.csTLS.Cert == "" || o.csTLS.Key == "" {
			return nil, errors.New("--region-pki needs --cluster-service-ca, --cluster-service-cert and --cluster-service-key: the rotation API admits the maintenance identity only")
		}
	}
	switch {
	case o.statementPub == "":
		return nil, errors.New("--sre-statement-public-key is required: the maintenance service carries out only requests the admin API signed")
	case o.replicaID == "":
		return nil, errors.New("--replica-id must not be empty")
	case o.maxInFlight < 1 || o.maxInFlight > 1000:
		return nil, fmt.Errorf("invalid value %d for --max-in-flight: must be between 1 and 1000", o.maxInFlight)
	case o.taskLease < 2*time.Second:
		return nil, fmt.Errorf("invalid value %s for --task-lease: must be at least 2s", o.taskLease)
	case o.poll < 100*time.Millisecond || o.campaignPoll < 100*time.Millisecond || o.requestPoll < 100*time.Millisecond || o.upgradePoll < 100*time.Millisecond:
		return nil, errors.New("--poll, --campaign-poll, --request-poll and --upgrade-poll must be at least 100ms")
	}
	if _, err := svcmain.Level(o.logLevel); err != nil {
		return nil, err
	}
	blackouts, err := maintenance.ParseBlackouts(o.blackoutsJSON)
	if err != nil {
		return nil, fmt.Errorf("invalid value for --blackouts: %w", err)
	}
	o.blackouts = blackouts
	return o, nil
}

func main() { svcmain.Main("maintenance", parseFlags, start) }

func start(o *options) error {
	level, _ := svcmain.Level(o.logLevel) // checked by parseFlags
	log := svcmain.Logger(level).With("service", "maintenance", "replica", o.replicaID)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return run(ctx, o, log)
}

func run(ctx context.Context, o *options, log *slog.Logger) error {
	metricsSrv, err := svcmain.ListenMetrics(o.metricsListen, o.metricsTLS)
	if err != nil {
		return err
	}
	defer metricsSrv.Close()
	conn, err := csclient.Dial(o.clusterService, o.csTLS)
	if err != nil {
		return fmt.Errorf("--cluster-service %s: %w", o.clusterService, err)
	}
	defer conn.Close()
	st, err := o.store.Open(ctx, log)
	if err != nil {
		return fmt.Errorf("open document store: %w", err)
	}
	defer st.Close()

	statementPub, err := srestatement.ReadPublicKey(o.statementPub)
	if err != nil {
		return fmt.Errorf("--sre-statement-public-key: %w", err)
	}
	cs := maintenance.NewClusterService(conn)
	tasks := maintenance.NewTasks(st)
	campaigns := maintenance.NewCampaigns(tasks, cs, nil)
	// The actuator runs every task type, and an SRE's request may create a task of any of them.
	var regionCert maintenance.RegionCertConfig
	if o.regionPKI != "" {
		api, err := pkirotation.NewClient(o.regionPKI, tlsconfig.Files{CA: o.csTLS.CA, Cert: o.csTLS.Cert, Key: o.csTLS.Key})
		if err != nil {
			return fmt.Errorf("--region-pki: %w", err)
		}
		regionCert = maintenance.RegionCertConfig{PKI: api, CAFile: o.csTLS.CA}
	}
	types := maintenance.TaskTypes(cs, maintenance.ZStreamConfig{Poll: o.upgradePoll}, regionCert)
	requests := maintenance.NewRequests(st, campaigns, nil, log).VerifyWith(statementPub).WithTypes(types)
	actuator, err := maintenance.NewActuator(tasks, types, maintenance.ActuatorConfig{
		Holder: o.replicaID, MaxInFlight: o.maxInFlight, LeaseDuration: o.taskLease, Poll: o.poll,
		Gate: maintenance.NewWindows(st, o.blackouts), Log: log,
	})
	if err != nil {
		return err
	}
	elector, err := leader.New(st, leader.Config{Name: campaignLease, Holder: o.replicaID, Log: log})
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		maintenance.NewCollector(tasks, campaigns, requests))
	metricsSrv.Serve(reg, log)

	log.Info("maintenance started", "clusterService", o.clusterService, "metrics", o.metricsListen, "maxInFlight", o.maxInFlight)
	done := make(chan error, 1)
	go func() {
		done <- elector.Run(ctx, func(ctx context.Context) {
			log.Info("moving campaigns and carrying out SRE requests: this replica holds the campaign lease")
			// Both stop when the lease is lost; the requests' loop is waited for, so a new term
			// never overlaps the last one's.
			requestsDone := make(chan struct{})
			go func() { defer close(requestsDone); requests.Run(ctx, o.requestPoll) }()
			campaigns.Run(ctx, o.campaignPoll)
			<-requestsDone
		})
	}()
	actuator.Run(ctx)
	if err := <-done; err != nil && ctx.Err() == nil {
		return fmt.Errorf("campaign lease: %w", err)
	}
	return nil
}
