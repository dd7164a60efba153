package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// clientVersion is hcpctl's own build, from the build information Go embeds in the binary.
type clientVersion struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// versionInfo is what hcpctl version prints. The admin API has no version endpoint, so
// hcpctl reports only its own build.
type versionInfo struct {
	ClientVersion clientVersion `json:"clientVersion"`
}

func buildVersion(bi *debug.BuildInfo, ok bool) clientVersion {
	v := clientVersion{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok {
		return v
	}
	v.Module, v.GoVersion = bi.Main.Path, bi.GoVersion
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version // (devel) for a build from a work tree
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hcpctl's version: its module version and VCS revision",
		Long: `Print hcpctl's version: its module version, the VCS revision and time it was built from
(when built with VCS stamping, as 'go build' does in a git checkout unless -buildvcs=false),
and the Go version. Nothing is called.`,
		Example:           "  hcpctl version\n  hcpctl version -o json",
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := versionInfo{ClientVersion: buildVersion(debug.ReadBuildInfo())}
			a := &app{out: c.out, output: c.g.output}
			return a.print(info, func(w io.Writer) {
				v := info.ClientVersion
				fmt.Fprintf(w, "Client Version: %s\n", v.Version)
				if v.Revision != "" {
					dirty := ""
					if v.Modified {
						dirty = " (modified)"
					}
					fmt.Fprintf(w, "Git Revision: %s%s\nBuilt From Commit At: %s\n", v.Revision, dirty, orDash(v.Time))
				} else {
					fmt.Fprintln(w, "Git Revision: unknown (built without VCS stamping)")
				}
				fmt.Fprintf(w, "Go Version: %s %s\n", v.GoVersion, v.Platform)
			})
		},
	}
}
