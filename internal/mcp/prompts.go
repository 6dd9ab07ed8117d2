package mcp

import (
	"context"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// promptHandler serves the prompt of one skill: its framed body, as the
// router's Load returns it, as one user message. Nothing is added to the
// router's frame, so nothing but the skill's own text can read as an
// instruction. Skills are offered as prompts unless hidden, disabled, or
// marked user-invocable: false; disable-model-invocation does not remove
// a prompt, since a prompt is what a user invokes (find_skills leaves such
// skills out, as the router's Match does).
func (f *Front) promptHandler(vw *view, name string) mcpsdk.PromptHandler {
	return func(ctx context.Context, req *mcpsdk.GetPromptRequest) (*mcpsdk.GetPromptResult, error) {
		agent, err := f.viewAgent(ctx, vw, name)
		if err != nil {
			return nil, err
		}
		res, err := f.router.Load(ctx, skill.LoadRequest{Name: name, Agent: agent, Level: skill.LevelBody})
		if err != nil {
			return nil, f.rpcError(ctx, skillURI(name, skill.FileName), err)
		}
		desc := ""
		if res.Skill != nil {
			desc = res.Skill.Description()
		}
		return &mcpsdk.GetPromptResult{
			Description: desc,
			Messages:    []*mcpsdk.PromptMessage{{Role: "user", Content: &mcpsdk.TextContent{Text: res.Content}}},
		}, nil
	}
}
