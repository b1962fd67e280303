package lite

import (
	"fmt"
	"reflect"
	"sort"
)

// statements is every statement lite declares, by the name it is declared
// under, with the fragments statements are built from. An array holds a
// statement's variants (leaseSQLs[queues][byKind][unlimited]).
// TestEveryStatementIsListed keeps it complete: a statement declared in
// lite and missing here fails it. lite_test's TestEveryStatement checks
// each one on each engine.
var statements = map[string]any{
	"ackDoneSQL":              ackDoneSQL,
	"ackDoneManySQL":          ackDoneManySQL,
	"keptErrors":              keptErrors,
	"ackFailedSQL":            ackFailedSQL,
	"jobStateSQL":             jobStateSQL,
	"cancelSQL":               cancelSQL,
	"retrySQL":                retrySQL,
	"retryWaitsSQL":           retryWaitsSQL,
	"retryLocksSQL":           retryLocksSQL,
	"keyHolderSQL":            keyHolderSQL,
	"insertJobSQL":            insertJobSQL,
	"takeUniqueSQL":           takeUniqueSQL,
	"holdUniqueSQL":           holdUniqueSQL,
	"uniqueHeldBySQL":         uniqueHeldBySQL,
	"debounceSQL":             debounceSQL,
	"cleanHoldsSQL":           cleanHoldsSQL,
	"insertManySQL":           insertManySQL,
	"lockFlowSQL":             lockFlowSQL,
	"pauseSQL":                pauseSQL,
	"setLimitsSQL":            setLimitsSQL,
	"waitForLeasesSQL":        waitForLeasesSQL,
	"queueFlowsSQL":           queueFlowsSQL,
	"getSQL":                  getSQL,
	"listColumns":             listColumns,
	"listSQLs":                listSQLs,
	"statsSQL":                statsSQL,
	"unfinishedSQL":           unfinishedSQL,
	"leaseSet":                leaseSet,
	"leaseSQLs":               leaseSQLs,
	"ackAndLeaseSQLs":         ackAndLeaseSQLs,
	"leaseByIDSQL":            leaseByIDSQL,
	"whyNotLeasedSQL":         whyNotLeasedSQL,
	"renewSQL":                renewSQL,
	"renewWaitingSQL":         renewWaitingSQL,
	"expireSQL":               expireSQL,
	"leaseLossSQL":            leaseLossSQL,
	"reclaimSQL":              reclaimSQL,
	"liveWorker":              liveWorker,
	"announceSQL":             announceSQL,
	"dropStaleWorkersSQL":     dropStaleWorkersSQL,
	"seenSQL":                 seenSQL,
	"retireSQL":               retireSQL,
	"workersSQL":              workersSQL,
	"unhandledSQL":            unhandledSQL,
	"releaseSQL":              releaseSQL,
	"savepointSQL":            savepointSQL,
	"releaseSPSQL":            releaseSPSQL,
	"rollbackSPSQL":           rollbackSPSQL,
	"releaseUnownedSQL":       releaseUnownedSQL,
	"snoozeSQL":               snoozeSQL,
	"retentionSQL":            retentionSQL,
	"setRetentionSQL":         setRetentionSQL,
	"clearRetentionSQL":       clearRetentionSQL,
	"cleanSQL":                cleanSQL,
	"setScheduleSQL":          setScheduleSQL,
	"schedulesSQL":            schedulesSQL,
	"removeScheduleSQL":       removeScheduleSQL,
	"pauseScheduleSQL":        pauseScheduleSQL,
	"resumeReadSQL":           resumeReadSQL,
	"resumeScheduleSQL":       resumeScheduleSQL,
	"aheadSchedulesSQL":       aheadSchedulesSQL,
	"rewindScheduleSQL":       rewindScheduleSQL,
	"dueSchedulesSQL":         dueSchedulesSQL,
	"fireReadSQL":             fireReadSQL,
	"fireScheduleSQL":         fireScheduleSQL,
	"nextScheduleSQL":         nextScheduleSQL,
	"throughputSQL":           throughputSQL,
	"backlogSQL":              backlogSQL,
	"nextRunAtSQL":            nextRunAtSQL,
	"leaseFlow":               leaseFlow,
	"nextRunFlow":             nextRunFlow,
	"lateResultSQL":           lateResultSQL,
	"fenceHighSQL":            fenceHighSQL,
	"fenceGenerationSQL":      fenceGenerationSQL,
	"fenceIDSQL":              fenceIDSQL,
	"rateHeldSQL":             rateHeldSQL,
	"rateHeldFlow":            rateHeldFlow,
	"serverTxBoundsSQL":       serverTxBoundsSQL,
	"scheduleOwnerSQL":        scheduleOwnerSQL,
	"retentionOwnerSQL":       retentionOwnerSQL,
	"limitsOwnerSQL":          limitsOwnerSQL,
	"lockTimeoutSQL":          lockTimeoutSQL,
	"changesInTurnSQL":        changesInTurnSQL,
	"anyRunningSQL":           anyRunningSQL,
	"cancelSet":               cancelSet,
	"bulkMatch":               bulkMatch,
	"bulkFindSQL":             bulkFindSQL,
	"bulkDeleteCountSQL":      bulkDeleteCountSQL,
	"bulkCountSQL":            bulkCountSQL,
	"lastIDSQL":               lastIDSQL,
	"bulkRetrySQL":            bulkRetrySQL,
	"bulkRetryWaitsSQL":       bulkRetryWaitsSQL,
	"pruneDepsSQL":            pruneDepsSQL,
	"pruneBatchesSQL":         pruneBatchesSQL,
	"bulkRetryLocksSQL":       bulkRetryLocksSQL,
	"bulkCancelSQL":           bulkCancelSQL,
	"bulkDeleteSQL":           bulkDeleteSQL,
	"bulkDeleteEndsSQL":       bulkDeleteEndsSQL,
	"bulkDeleteLocksSQL":      bulkDeleteLocksSQL,
	"stepSQL":                 stepSQL,
	"stepsSQL":                stepsSQL,
	"recordStepSQL":           recordStepSQL,
	"leaseStepSQL":            leaseStepSQL,
	"recordStepsSQL":          recordStepsSQL,
	"ownsSQL":                 ownsSQL,
	"parkLockSQL":             parkLockSQL,
	"signalWaitsSQL":          signalWaitsSQL,
	"parkSQL":                 parkSQL,
	"outcomesSQL":             outcomesSQL,
	"insertAwaitsSQL":         insertAwaitsSQL,
	"parkAwaitingSQL":         parkAwaitingSQL,
	"signalKeySentSQL":        signalKeySentSQL,
	"signalTargetSQL":         signalTargetSQL,
	"insertSignalSQL":         insertSignalSQL,
	"wakeSignalledSQL":        wakeSignalledSQL,
	"consumeSignalSQL":        consumeSignalSQL,
	"countersSQL":             countersSQL,
	"previewsSQL":             previewsSQL,
	"jobStatesSQL":            jobStatesSQL,
	"reportSQL":               reportSQL,
	"lockDepsSQL":             lockDepsSQL,
	"insertDepsSQL":           insertDepsSQL,
	"setFollowsSQL":           setFollowsSQL,
	"insertBatchSQL":          insertBatchSQL,
	"dependenciesSQL":         dependenciesSQL,
	"dependentsSQL":           dependentsSQL,
	"batchSQL":                batchSQL,
	"linksSQL":                linksSQL,
	"graphSQL":                graphSQL,
	"dropIdleQueuesSQL":       dropIdleQueuesSQL,
	"removeSchedulesSQL":      removeSchedulesSQL,
	"liftUndeclaredLimitsSQL": liftUndeclaredLimitsSQL,
	"lostLeasesSQL":           lostLeasesSQL,
}

// fragments are the parts that statements are built from: checked for
// both halves and their parameters, but not prepared alone.
var fragments = map[string]bool{
	"keptErrors":   true,
	"leaseFlow":    true,
	"leaseSet":     true,
	"listColumns":  true,
	"liveWorker":   true,
	"nextRunFlow":  true,
	"rateHeldFlow": true,
	"cancelSet":    true,
	"bulkMatch":    true,
}

// onlyOn are the statements that one engine alone runs, with an empty
// text for the other.
var onlyOn = map[string]engine{
	"lockFlowSQL":        enginePostgres, // SQLite's one writer needs no row locks
	"retryLocksSQL":      enginePostgres,
	"bulkRetryLocksSQL":  enginePostgres,
	"bulkDeleteLocksSQL": enginePostgres,
	"waitForLeasesSQL":   enginePostgres,
	"serverTxBoundsSQL":  enginePostgres,
	"lockTimeoutSQL":     enginePostgres,
	"renewWaitingSQL":    enginePostgres, // SQLite's renewal waits for the file, holding no row
	"changesInTurnSQL":   enginePostgres,
	"ackAndLeaseSQLs":    enginePostgres, // SQLite's writer rounds are its own
	"savepointSQL":       engineSQLite,   // a round of writes shares one transaction on SQLite only
	"releaseSPSQL":       engineSQLite,
	"rollbackSPSQL":      engineSQLite,
	"recordStepsSQL":     engineSQLite, // steps gathered in a writer's round
}

// Statement is one of lite's statements in both dialects, for lite_test.
type Statement struct {
	Name             string
	SQLite, Postgres string
	Fragment         bool   // a part of statements, not one to prepare
	Only             string // the one engine that runs it, or ""
}

// Statements is every statement and fragment lite declares, sorted by
// name, with an array's variants one by one under their indexes.
func Statements() []Statement {
	var all []Statement
	for name, v := range statements {
		only := ""
		if e, ok := onlyOn[name]; ok {
			only = e.String()
		}
		all = flatten(all, Statement{Name: name, Fragment: fragments[name], Only: only}, reflect.ValueOf(v))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// flatten appends the statements v holds, named and marked as like.
func flatten(all []Statement, like Statement, v reflect.Value) []Statement {
	if s, ok := v.Interface().(stmt); ok {
		like.SQLite, like.Postgres = s.sqlite, s.postgres
		return append(all, like)
	}
	name := like.Name
	for i := range v.Len() {
		like.Name = fmt.Sprintf("%s[%d]", name, i)
		all = flatten(all, like, v.Index(i))
	}
	return all
}
