package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// newCompletionCmd prints a shell's completion script. The scripts ask hcpctl itself
// (hcpctl __complete …) what to offer, so cluster IDs and shard names come from the admin API
// when it answers.
func newCompletionCmd(root *cobra.Command) *cobra.Command {
	shells := []string{"bash", "zsh", "fish", "powershell"}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script (commands, flags, and cluster IDs and shard names from the admin API)",
		Long: `Print a shell completion script. Load it into the current shell, or install it for every
session. Commands, flags and their fixed values complete offline; cluster IDs and shard names
come from the admin API (with the global flags on the line, or their environment variables)
when it answers within seconds.`,
		Example: `  source <(hcpctl completion bash)
  hcpctl completion bash > /etc/bash_completion.d/hcpctl
  source <(hcpctl completion zsh)
  hcpctl completion fish > ~/.config/fish/completions/hcpctl.fish`,
		ValidArgs:             shells,
		Args:                  completionArgs(shells),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return bashCompletion(root, w)
			case "zsh":
				return root.GenZshCompletion(w)
			case "fish":
				return root.GenFishCompletion(w, true)
			default:
				return root.GenPowerShellCompletionWithDesc(w)
			}
		},
	}
}

func completionArgs(shells []string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 || !strings.Contains(" "+strings.Join(shells, " ")+" ", " "+args[0]+" ") {
			return usagef("completion takes one shell: %s, got %q", strings.Join(shells, ", "), strings.Join(args, " "))
		}
		return nil
	}
}

// bashCompletion is cobra's bash script, headed by the command table, and entered through
// _hcpctl: the function name scripts and tests have called since before cobra.
func bashCompletion(root *cobra.Command, w io.Writer) error {
	fmt.Fprintln(w, "# bash completion for hcpctl: source <(hcpctl completion bash)")
	fmt.Fprintln(w, "# Commands (each completes its flags, and cluster IDs or shard names from the admin API):")
	for _, n := range root.Commands() {
		if !n.IsAvailableCommand() {
			continue
		}
		fmt.Fprintf(w, "#   %s\n", strings.TrimSpace(n.Name()+" "+n.Annotations[verbsAnnotation]))
	}
	if err := root.GenBashCompletionV2(w, true); err != nil {
		return err
	}
	// -o default (file names when hcpctl offers nothing) as cobra's own registration sets it.
	_, err := fmt.Fprint(w, "\n_hcpctl() {\n    compopt -o default 2>/dev/null\n    __start_hcpctl \"$@\"\n}\ncomplete -F _hcpctl hcpctl\n")
	return err
}
