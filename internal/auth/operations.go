package auth

// Operation is one thing a caller asks of the router, whichever front it
// comes through: each front names the operation of each of its methods or
// tools (the gRPC front by full method name, the MCP front by feature),
// and this package's one table says which group grants it.
type Operation string

// Operations.
const (
	OpListSkills       Operation = "ListSkills"
	OpGetSkill         Operation = "GetSkill"
	OpStatus           Operation = "Status"
	OpDescribeAPI      Operation = "DescribeAPI" // server reflection
	OpMatch            Operation = "Match"
	OpLoad             Operation = "Load"
	OpAuthorizeExec    Operation = "AuthorizeExec"
	OpReportExecResult Operation = "ReportExecResult"
	OpCallTool         Operation = "CallTool"
	OpReindex          Operation = "Reindex"
)

// operationGroups says which group grants each operation.
var operationGroups = map[Operation]Group{
	OpListSkills:       GroupRead,
	OpGetSkill:         GroupRead,
	OpStatus:           GroupRead,
	OpDescribeAPI:      GroupRead,
	OpMatch:            GroupMatch,
	OpLoad:             GroupLoad,
	OpAuthorizeExec:    GroupExec,
	OpReportExecResult: GroupExec,
	OpCallTool:         GroupExec,
	OpReindex:          GroupAdmin,
}

// GroupOf returns the group that grants op; ok is false for an operation
// the table does not know.
func GroupOf(op Operation) (g Group, ok bool) {
	g, ok = operationGroups[op]
	return g, ok
}

// May reports whether p may ask for op: its tokens grant op's group (an
// anonymous caller, or one without tokens, may ask for anything known).
func (p *Principal) May(op Operation) bool {
	g, ok := operationGroups[op]
	return ok && p.Allows(g)
}
