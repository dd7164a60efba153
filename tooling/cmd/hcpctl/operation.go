package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

func newOperationCmd(c *cli) *cobra.Command {
	return noun("operation", "ARM operations region-wide: list",
		"  hcpctl operation list", newOperationListCmd(c))
}

func newOperationListCmd(c *cli) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List active ARM operations region-wide, with age and what they wait on (-o wide adds subscription, correlation ID and error)",
		Example: `  hcpctl operation list
  hcpctl operation list --all -o json`,
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error { return operationList(ctx, a, all) })
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "finished operations too")
	return cmd
}

func operationList(ctx context.Context, a *app, finished bool) error {
	var all []adminapi.Operation
	token := ""
	for {
		page, err := a.c.ListOperations(ctx, finished, 1000, token)
		if err != nil {
			return err
		}
		all = append(all, page.Operations...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if all == nil {
		all = []adminapi.Operation{}
	}
	return a.print(adminapi.OperationList{Operations: all}, func(w io.Writer) {
		t := table(w, ifWide(a.wide(), []string{"ID", "REQUEST", "STATUS", "AGE", "RESOURCE", "WAITING ON"}, "SUBSCRIPTION", "CORRELATION", "ERROR")...)
		for _, op := range all {
			t.row(ifWide(a.wide(), []string{op.ID, op.Request, op.Status, age(time.Duration(op.AgeSeconds) * time.Second), op.ResourceID, orDash(op.WaitingOn)},
				orDash(op.Subscription), orDash(op.CorrelationID), orDash(op.Error))...)
		}
		t.flush()
	})
}
