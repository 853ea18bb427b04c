"""Vocabulary constants: every PROV-O, RDF and trails IRI the code spells.

No other module writes a PROV or trails IRI as a string literal; they import
these constants. ``ontologies/trails.ttl`` defines the ``trails:`` terms and a
test checks that every ``TRAILS`` constant here is declared there.
"""

from __future__ import annotations

from trails.store.terms import IRI

__all__ = [
    "NAMESPACES",
    "OWL",
    "PROV",
    "RDF",
    "RDFS",
    "TRAILS",
    "XSD",
    "Namespace",
    "sparql_prefixes",
]


class Namespace(str):
    """A namespace IRI; ``NS.term`` and ``NS["term"]`` give the term's IRI.

    A term is built once and then kept as an attribute, so the recorder's hot
    path reads plain attributes.
    """

    def __getattr__(self, name: str) -> IRI:
        if name.startswith("__"):
            raise AttributeError(name)
        iri = IRI.trusted(str(self) + name)
        self.__dict__[name] = iri
        return iri

    def __getitem__(self, name: str) -> IRI:  # type: ignore[override]
        return self.__getattr__(name)


PROV = Namespace("http://www.w3.org/ns/prov#")
RDF = Namespace("http://www.w3.org/1999/02/22-rdf-syntax-ns#")
RDFS = Namespace("http://www.w3.org/2000/01/rdf-schema#")
XSD = Namespace("http://www.w3.org/2001/XMLSchema#")
OWL = Namespace("http://www.w3.org/2002/07/owl#")
TRAILS = Namespace("https://w3id.org/trails/ns#")

NAMESPACES: dict[str, str] = {
    "prov": str(PROV),
    "rdf": str(RDF),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
    "owl": str(OWL),
    "trails": str(TRAILS),
}


def sparql_prefixes() -> str:
    """``PREFIX`` lines for every namespace above, to start SPARQL written in code."""
    return "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())


class T:
    """The trails terms the recorder writes, as attributes (checked against trails.ttl)."""

    # classes: activities
    Session = TRAILS.Session
    PlanRun = TRAILS.PlanRun
    ReActPlan = TRAILS.ReActPlan
    PlanAndExecutePlan = TRAILS.PlanAndExecutePlan
    ReflexionPlan = TRAILS.ReflexionPlan
    PlanExecuteReflectPlan = TRAILS.PlanExecuteReflectPlan
    BehaviourTreePlan = TRAILS.BehaviourTreePlan
    LLMCompletion = TRAILS.LLMCompletion
    CapabilityInvocation = TRAILS.CapabilityInvocation
    PolicyDecision = TRAILS.PolicyDecision
    ProviderFallback = TRAILS.ProviderFallback
    MemoryOperation = TRAILS.MemoryOperation
    # classes: entities
    Prompt = TRAILS.Prompt
    Completion = TRAILS.Completion
    ToolCallRequest = TRAILS.ToolCallRequest
    CapabilityInput = TRAILS.CapabilityInput
    CapabilityOutput = TRAILS.CapabilityOutput
    PlanDocument = TRAILS.PlanDocument
    Critique = TRAILS.Critique
    Memory = TRAILS.Memory
    Termination = TRAILS.Termination
    BudgetBreach = TRAILS.BudgetBreach
    StepLimit = TRAILS.StepLimit
    Error = TRAILS.Error
    Interruption = TRAILS.Interruption
    TerminalAction = TRAILS.TerminalAction
    # classes: agents and plans
    Principal = TRAILS.Principal
    Model = TRAILS.Model
    Policy = TRAILS.Policy
    PolicyRules = TRAILS.PolicyRules
    Capability = TRAILS.Capability
    # object properties
    inSession = TRAILS.inSession
    wasTerminatedBy = TRAILS.wasTerminatedBy
    capability = TRAILS.capability
    decidedOn = TRAILS.decidedOn
    authorizedBy = TRAILS.authorizedBy
    # datatype properties
    sha256 = TRAILS.sha256
    contentPolicy = TRAILS.contentPolicy
    status = TRAILS.status
    errorMessage = TRAILS.errorMessage
    errorMessageSha256 = TRAILS.errorMessageSha256
    goal = TRAILS.goal
    goalSha256 = TRAILS.goalSha256
    strategy = TRAILS.strategy
    stopReason = TRAILS.stopReason
    answer = TRAILS.answer
    answerSha256 = TRAILS.answerSha256
    capabilityId = TRAILS.capabilityId
    sideEffects = TRAILS.sideEffects
    terminal = TRAILS.terminal
    highRisk = TRAILS.highRisk
    screenOutput = TRAILS.screenOutput
    grantedTo = TRAILS.grantedTo
    outputScreenedBy = TRAILS.outputScreenedBy
    provider = TRAILS.provider
    modelId = TRAILS.modelId
    requestHash = TRAILS.requestHash
    requestId = TRAILS.requestId
    toolCallId = TRAILS.toolCallId
    inputTokens = TRAILS.inputTokens
    outputTokens = TRAILS.outputTokens
    cacheReadTokens = TRAILS.cacheReadTokens
    cacheWriteTokens = TRAILS.cacheWriteTokens
    costUSD = TRAILS.costUSD
    CostWarningIssued = TRAILS.CostWarningIssued
    CircuitSkip = TRAILS.CircuitSkip
    skippedProvider = TRAILS.skippedProvider
    askedInstead = TRAILS.askedInstead
    circuitOpenUntil = TRAILS.circuitOpenUntil
    skippedFor = TRAILS.skippedFor
    costWarningUSD = TRAILS.costWarningUSD
    spentUSD = TRAILS.spentUSD
    cacheHit = TRAILS.cacheHit
    cacheScope = TRAILS.cacheScope
    cachedFrom = TRAILS.cachedFrom
    latencyMs = TRAILS.latencyMs
    retries = TRAILS.retries
    failedProvider = TRAILS.failedProvider
    nextProvider = TRAILS.nextProvider
    budgetKind = TRAILS.budgetKind
    decision = TRAILS.decision
    reason = TRAILS.reason
    # spans a receiver refused (their session had ended, or was not its own)
    SpansRefused = TRAILS.SpansRefused
    refusedSession = TRAILS.refusedSession
    refusedSpanCount = TRAILS.refusedSpanCount
    matchedRule = TRAILS.matchedRule
    reviewOutcome = TRAILS.reviewOutcome
    approvalTimeoutS = TRAILS.approvalTimeoutS
    limit = TRAILS.limit
    observed = TRAILS.observed
    detectedAt = TRAILS.detectedAt
    stepIndex = TRAILS.stepIndex
    assuranceLevel = TRAILS.assuranceLevel
    rerunOf = TRAILS.rerunOf
    domain = TRAILS.domain
    principalId = TRAILS.principalId
    mcpClientName = TRAILS.mcpClientName
    mcpClientVersion = TRAILS.mcpClientVersion
    # MCP: a mounted server's tools, and the capability manifest (trails.mcp)
    McpServer = TRAILS.McpServer
    McpTool = TRAILS.McpTool
    mcpServerName = TRAILS.mcpServerName
    mcpServerVersion = TRAILS.mcpServerVersion
    mcpTransport = TRAILS.mcpTransport
    mcpToolName = TRAILS.mcpToolName
    CapabilityManifest = TRAILS.CapabilityManifest
    offers = TRAILS.offers
    inputSchema = TRAILS.inputSchema
    outputSchema = TRAILS.outputSchema
    costEstimate = TRAILS.costEstimate
    precondition = TRAILS.precondition
    mcpProjection = TRAILS.mcpProjection
    # audit: seals in the ledger graph, redaction on export
    Seal = TRAILS.Seal
    sealedGraph = TRAILS.sealedGraph
    openSession = TRAILS.openSession
    claimsSession = TRAILS.claimsSession
    graphHash = TRAILS.graphHash
    quadCount = TRAILS.quadCount
    sealSequence = TRAILS.sealSequence
    sealHash = TRAILS.sealHash
    previousSeal = TRAILS.previousSeal
    previousSealHash = TRAILS.previousSealHash
    signature = TRAILS.signature
    signingKey = TRAILS.signingKey
    SealChain = TRAILS.SealChain
    sealChain = TRAILS.sealChain
    writerId = TRAILS.writerId
    anchor = TRAILS.anchor
    anchorHash = TRAILS.anchorHash
    latestSeal = TRAILS.latestSeal
    KeyRotation = TRAILS.KeyRotation
    fromKey = TRAILS.fromKey
    toKey = TRAILS.toKey
    rotationHash = TRAILS.rotationHash
    VerificationCheckpoint = TRAILS.VerificationCheckpoint
    latestCheckpoint = TRAILS.latestCheckpoint
    previousCheckpoint = TRAILS.previousCheckpoint
    verifiedSeal = TRAILS.verifiedSeal
    verifiedSealHash = TRAILS.verifiedSealHash
    checkpointHash = TRAILS.checkpointHash
    verificationMode = TRAILS.verificationMode
    lastFullVerification = TRAILS.lastFullVerification
    sealsVerified = TRAILS.sealsVerified
    graphsVerified = TRAILS.graphsVerified
    logSize = TRAILS.logSize
    logRoot = TRAILS.logRoot
    # evidence: the transparency log over the seals (trails.evidence.transparency)
    TreeHead = TRAILS.TreeHead
    latestTreeHead = TRAILS.latestTreeHead
    treeSize = TRAILS.treeSize
    rootHash = TRAILS.rootHash
    headHash = TRAILS.headHash
    timestampToken = TRAILS.timestampToken
    checkpointNote = TRAILS.checkpointNote
    cosignature = TRAILS.cosignature
    nodeHash = TRAILS.nodeHash
    leafSeal = TRAILS.leafSeal
    leafIndex = TRAILS.leafIndex
    loggedSeal = TRAILS.loggedSeal
    redaction = TRAILS.redaction
    # audit: the session catalogue (one summary per session, in its own graph)
    SessionSummary = TRAILS.SessionSummary
    OpenSessionSummary = TRAILS.OpenSessionSummary
    AgentUsage = TRAILS.AgentUsage
    summaryOf = TRAILS.summaryOf
    sessionStarted = TRAILS.sessionStarted
    startedInMinute = TRAILS.startedInMinute
    StartMinute = TRAILS.StartMinute
    StartDay = TRAILS.StartDay
    minuteOf = TRAILS.minuteOf
    startedInSecond = TRAILS.startedInSecond
    StartSecond = TRAILS.StartSecond
    secondOf = TRAILS.secondOf
    StartHour = TRAILS.StartHour
    hourOf = TRAILS.hourOf
    minuteOfHour = TRAILS.minuteOfHour
    sessionEnded = TRAILS.sessionEnded
    sessionStatus = TRAILS.sessionStatus
    sessionStopReason = TRAILS.sessionStopReason
    sessionOutcome = TRAILS.sessionOutcome
    outcomeReason = TRAILS.outcomeReason
    planner = TRAILS.planner
    usedModel = TRAILS.usedModel
    sealed = TRAILS.sealed
    usage = TRAILS.usage
    usedAgent = TRAILS.usedAgent
    actingFor = TRAILS.actingFor
    activityCount = TRAILS.activityCount
    completionCount = TRAILS.completionCount
    unpricedCount = TRAILS.unpricedCount
    totalInputTokens = TRAILS.totalInputTokens
    totalOutputTokens = TRAILS.totalOutputTokens
    totalCostUSD = TRAILS.totalCostUSD
    # audit: the catalogue's days and their cost totals
    CatalogueDay = TRAILS.CatalogueDay
    DailyTotal = TRAILS.DailyTotal
    endedOn = TRAILS.endedOn
    day = TRAILS.day
    totalsOf = TRAILS.totalsOf
    totalAgent = TRAILS.totalAgent
    totalledAt = TRAILS.totalledAt
    RunningTotal = TRAILS.RunningTotal
    runningThrough = TRAILS.runningThrough
    entriesDated = TRAILS.entriesDated
    openSummariesTyped = TRAILS.openSummariesTyped
    sessionCount = TRAILS.sessionCount
    runningSessions = TRAILS.runningSessions
    # history evictions and batches
    HistoryEviction = TRAILS.HistoryEviction
    EvictedEntry = TRAILS.EvictedEntry
    HistorySummary = TRAILS.HistorySummary
    evictedCount = TRAILS.evictedCount
    Batch = TRAILS.Batch
    batchId = TRAILS.batchId
    goalCount = TRAILS.goalCount
    failedCount = TRAILS.failedCount
    # sessions' own actions and attachments
    TraceMetadata = TRAILS.TraceMetadata
    SessionSave = TRAILS.SessionSave
    SessionLoad = TRAILS.SessionLoad
    messageCount = TRAILS.messageCount
    Attachment = TRAILS.Attachment
    mediaType = TRAILS.mediaType
    byteSize = TRAILS.byteSize
    # behaviour-tree nodes
    TreeNode = TRAILS.TreeNode
    inRun = TRAILS.inRun
    nodeId = TRAILS.nodeId
    nodeKind = TRAILS.nodeKind
    nodeOutcome = TRAILS.nodeOutcome
    voteSuccesses = TRAILS.voteSuccesses
    voteFailures = TRAILS.voteFailures
    voteThreshold = TRAILS.voteThreshold
    votePolicy = TRAILS.votePolicy
    # behaviour-tree checkpoints
    TreeCheckpoint = TRAILS.TreeCheckpoint
    checkpointId = TRAILS.checkpointId
    checkpointSeq = TRAILS.checkpointSeq
    # Plan-Execute-Reflect options
    continues = TRAILS.continues
    responseFilter = TRAILS.responseFilter
    # token traces of streamed completions (ADR-0018 open question 1)
    TokenTrace = TRAILS.TokenTrace
    Token = TRAILS.Token
    tokenIndex = TRAILS.tokenIndex
    charOffset = TRAILS.charOffset
    charLength = TRAILS.charLength
    # PII masking at the source
    Masking = TRAILS.Masking
    masking = TRAILS.masking
    maskingRule = TRAILS.maskingRule
    maskedProperty = TRAILS.maskedProperty
    matchCount = TRAILS.matchCount
    # legal holds
    LegalHold = TRAILS.LegalHold
    HoldPlacement = TRAILS.HoldPlacement
    HoldRelease = TRAILS.HoldRelease
    heldSession = TRAILS.heldSession
    heldPrincipal = TRAILS.heldPrincipal
    holdReason = TRAILS.holdReason
    releaseReason = TRAILS.releaseReason
    # retention: removals past the configured periods
    RetentionRun = TRAILS.RetentionRun
    RetentionRemoval = TRAILS.RetentionRemoval
    removedGraph = TRAILS.removedGraph
    removedPart = TRAILS.removedPart
    retentionRule = TRAILS.retentionRule
    retentionReason = TRAILS.retentionReason
    removedSealHash = TRAILS.removedSealHash
    # controls: rules over the evidence, their evaluations and findings
    Control = TRAILS.Control
    ControlEvaluation = TRAILS.ControlEvaluation
    ControlFinding = TRAILS.ControlFinding
    controlId = TRAILS.controlId
    controlScope = TRAILS.controlScope
    controlReference = TRAILS.controlReference
    definitionSha256 = TRAILS.definitionSha256
    severity = TRAILS.severity
    outcome = TRAILS.outcome
    outcomeDetail = TRAILS.outcomeDetail
    evaluatedSession = TRAILS.evaluatedSession
    readGraph = TRAILS.readGraph
    findingCount = TRAILS.findingCount
    findingOf = TRAILS.findingOf
    findingSubject = TRAILS.findingSubject
    findingSession = TRAILS.findingSession
    findingMessage = TRAILS.findingMessage
    # memory: learn / recall / forget on the store
    MemoryLearn = TRAILS.MemoryLearn
    MemoryRecall = TRAILS.MemoryRecall
    MemoryForget = TRAILS.MemoryForget
    scope = TRAILS.scope
    topic = TRAILS.topic
    topicSha256 = TRAILS.topicSha256
    tag = TRAILS.tag
    tags = TRAILS.tags
    tagsSha256 = TRAILS.tagsSha256
    learnedSha256 = TRAILS.learnedSha256
    confidence = TRAILS.confidence
    validFrom = TRAILS.validFrom
    validUntil = TRAILS.validUntil
    recallQuery = TRAILS.recallQuery
    recallQuerySha256 = TRAILS.recallQuerySha256
    sessionLabel = TRAILS.sessionLabel
    sessionLabelSha256 = TRAILS.sessionLabelSha256
    rank = TRAILS.rank
    score = TRAILS.score
    memoryRevision = TRAILS.memoryRevision
    # endpoint: the access log of the SPARQL endpoint
    QueryReceived = TRAILS.QueryReceived
    SparqlQuery = TRAILS.SparqlQuery
    httpStatus = TRAILS.httpStatus
    resultCount = TRAILS.resultCount
    queryName = TRAILS.queryName
    queryParameters = TRAILS.queryParameters
    # session persistence: the replayable projection of a session, and forks
    SessionProjection = TRAILS.SessionProjection
    HistoryEntry = TRAILS.HistoryEntry
    InvocationEnvelope = TRAILS.InvocationEnvelope
    CompletionReference = TRAILS.CompletionReference
    SessionFork = TRAILS.SessionFork
    projectionOf = TRAILS.projectionOf
    ofActivity = TRAILS.ofActivity
    formatVersion = TRAILS.formatVersion
    sessionId = TRAILS.sessionId
    sessionStrategy = TRAILS.sessionStrategy
    budget = TRAILS.budget
    metadata = TRAILS.metadata
    agentCard = TRAILS.agentCard
    windowTokens = TRAILS.windowTokens
    pinHead = TRAILS.pinHead
    position = TRAILS.position
    role = TRAILS.role
    tokenCount = TRAILS.tokenCount
    pinned = TRAILS.pinned
    arguments = TRAILS.arguments
    argumentsSha256 = TRAILS.argumentsSha256
    result = TRAILS.result
    resultSha256 = TRAILS.resultSha256
    invocationStatus = TRAILS.invocationStatus
    invocationError = TRAILS.invocationError
    startedAt = TRAILS.startedAt
    endedAt = TRAILS.endedAt
    # content apart from structure: erasure and migration receipts
    Erasure = TRAILS.Erasure
    erasureReason = TRAILS.erasureReason
    erasedDigest = TRAILS.erasedDigest
    erasedSession = TRAILS.erasedSession
    erasedPrincipal = TRAILS.erasedPrincipal
    erasedMemory = TRAILS.erasedMemory
    erasedCount = TRAILS.erasedCount
    skippedHold = TRAILS.skippedHold
    ContentMigration = TRAILS.ContentMigration
    migratedGraph = TRAILS.migratedGraph
    migratedCount = TRAILS.migratedCount
    # otel: activities received as OTLP spans
    TraceSpan = TRAILS.TraceSpan
    traceId = TRAILS.traceId
    spanId = TRAILS.spanId
    operationName = TRAILS.operationName
    toolCallId = TRAILS.toolCallId
    requestedBy = TRAILS.requestedBy
    reasoningTokens = TRAILS.reasoningTokens
    agentName = TRAILS.agentName
    agentId = TRAILS.agentId
    conversationId = TRAILS.conversationId
    errorType = TRAILS.errorType
    finishReason = TRAILS.finishReason
    requestModel = TRAILS.requestModel
    SpanRecord = TRAILS.SpanRecord
    spanRecord = TRAILS.spanRecord
