package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skillpb"
)

// completionTimeout bounds the router calls made while a shell completes a
// word, unless --timeout says otherwise: a shell must not hang on a
// router that does not answer.
const completionTimeout = 2 * time.Second

// askRouter completes from the router's answer: skill names, agents,
// servers. Without a router (or on any error) it offers nothing, and never
// file names.
func (e *env) askRouter(list func(ctx context.Context, cmd *cobra.Command, c routerv1.SkillRouterClient, args []string) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const none = cobra.ShellCompDirectiveNoFileComp
		if e.setup(cmd, args) != nil || e.dial() != nil {
			return nil, none
		}
		timeout := completionTimeout
		if e.timeoutSet {
			timeout = e.timeout
		}
		ctx, cancel := context.WithTimeout(withoutRetry(cmd.Context()), timeout)
		defer cancel()
		words, err := list(ctx, cmd, routerv1.NewSkillRouterClient(e.conn), args)
		if err != nil {
			return nil, none
		}
		return withPrefix(words, toComplete), none
	}
}

// withPrefix keeps the words that start with prefix, sorted, once each.
func withPrefix(words []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// fixedWords completes a flag from a fixed list of values.
func fixedWords(words ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// listWords completes the last item of a comma-separated list (--groups
// read,ma<TAB>) from words, keeping the items before it.
func listWords(words func(cmd *cobra.Command) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		i := strings.LastIndex(toComplete, ",")
		done, last := toComplete[:i+1], toComplete[i+1:]
		var out []cobra.Completion
		for _, w := range withPrefix(words(cmd), last) {
			out = append(out, done+w)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// firstArg completes only the first positional argument with f.
func firstArg(f cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f(cmd, args, toComplete)
	}
}

// skillNames lists the skills (and, with tools, the tools of MCP servers)
// the command's --agent sees, hidden and disabled ones included.
func skillNames(tools bool) func(context.Context, *cobra.Command, routerv1.SkillRouterClient, []string) ([]string, error) {
	return func(ctx context.Context, cmd *cobra.Command, c routerv1.SkillRouterClient, _ []string) ([]string, error) {
		agent, _ := cmd.Flags().GetString("agent")
		kinds := routerv1.KindFilter_KIND_FILTER_SKILLS
		if tools {
			kinds = routerv1.KindFilter_KIND_FILTER_UNSPECIFIED
		}
		req := &routerv1.ListSkillsRequest{Agent: agent, PageSize: 1000, IncludeHidden: true, IncludeDisabled: true, Kinds: kinds}
		var names []string
		for {
			page, err := c.ListSkills(ctx, req)
			if err != nil {
				return nil, err
			}
			for _, s := range page.Skills {
				names = append(names, s.Name)
			}
			if page.NextPageToken == "" {
				return names, nil
			}
			req.PageToken = page.NextPageToken
		}
	}
}

// skillFiles lists the files of the skill named by the first argument, as
// the command's --agent sees it.
func skillFiles(ctx context.Context, cmd *cobra.Command, c routerv1.SkillRouterClient, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	agent, _ := cmd.Flags().GetString("agent")
	res, err := c.GetSkill(ctx, &routerv1.GetSkillRequest{Name: args[0], Agent: agent})
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, r := range skillpb.Entry(res.GetSkill()).Skill.Resources {
		paths = append(paths, r.Path)
	}
	return paths, nil
}

// agentNames lists the agents the router knows.
func agentNames(ctx context.Context, _ *cobra.Command, c routerv1.SkillRouterClient, _ []string) ([]string, error) {
	st, err := c.Status(ctx, &routerv1.StatusRequest{})
	if err != nil {
		return nil, err
	}
	return st.Agents, nil
}

// serverNames lists the MCP servers the router is configured with.
func serverNames(ctx context.Context, _ *cobra.Command, c routerv1.SkillRouterClient, _ []string) ([]string, error) {
	st, err := c.Status(ctx, &routerv1.StatusRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range st.Servers {
		names = append(names, s.Name)
	}
	return names, nil
}

// completeAgentFlag completes --agent from the router's agents.
func (e *env) completeAgentFlag(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("agent", e.askRouter(agentNames))
}

// completeKindsFlag completes --kinds.
func completeKindsFlag(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("kinds", fixedWords("skills", "tools", "both"))
}

// completeDirArgs completes positional arguments with folders only.
func completeDirArgs(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// registerCompletions teaches the shell completion what each command's
// arguments and flags take: skill names, their files, agents and MCP
// servers from the router; flag values from their fixed lists; folders
// where a folder is expected.
func (e *env) registerCompletions(root *cobra.Command) {
	skills, anyEntry := e.askRouter(skillNames(false)), e.askRouter(skillNames(true))
	for _, cmd := range root.Commands() {
		if cmd.Flags().Lookup("agent") != nil {
			e.completeAgentFlag(cmd)
		}
		if cmd.Flags().Lookup("kinds") != nil {
			completeKindsFlag(cmd)
		}
		for flag, words := range map[string][]string{
			"mode":   {"hybrid", "dense", "bm25"},
			"fusion": {"adaptive", "convex", "rrf", "tiebreak"},
		} {
			if cmd.Flags().Lookup(flag) != nil {
				_ = cmd.RegisterFlagCompletionFunc(flag, fixedWords(words...))
			}
		}
		for _, flag := range []string{"skills", "model-dir"} {
			if cmd.Flags().Lookup(flag) != nil {
				_ = cmd.MarkFlagDirname(flag)
			}
		}
		switch cmd.Name() {
		case "show":
			cmd.ValidArgsFunction = firstArg(anyEntry)
		case "load":
			cmd.ValidArgsFunction = firstArg(skills)
			_ = cmd.RegisterFlagCompletionFunc("level", fixedWords("1", "2", "3"))
			_ = cmd.RegisterFlagCompletionFunc("resource", e.askRouter(skillFiles))
		case "authorize-exec":
			files := e.askRouter(skillFiles)
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				switch len(args) {
				case 0:
					return skills(cmd, args, toComplete)
				case 1:
					return files(cmd, args, toComplete)
				}
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		case "token":
			_ = cmd.RegisterFlagCompletionFunc("groups", listWords(func(*cobra.Command) []string { return tokenGroups }))
			_ = cmd.RegisterFlagCompletionFunc("agents", listWords(e.routerWords(agentNames)))
			_ = cmd.RegisterFlagCompletionFunc("servers", listWords(e.routerWords(serverNames)))
		case "validate":
			cmd.ValidArgsFunction = completeDirArgs
		case "model":
			for _, sub := range cmd.Commands() {
				if sub.Name() == "verify" {
					sub.ValidArgsFunction = firstArg(completeDirArgs)
				}
			}
		}
	}
}

// routerWords returns the router's answer as plain words, nil when it
// does not answer.
func (e *env) routerWords(list func(context.Context, *cobra.Command, routerv1.SkillRouterClient, []string) ([]string, error)) func(*cobra.Command) []string {
	return func(cmd *cobra.Command) []string {
		words, _ := e.askRouter(list)(cmd, nil, "")
		return words
	}
}
