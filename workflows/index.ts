// Every workflow the worker registers. Deterministic code only: import @temporalio/workflow and activity types.
export { diagnosticsWorkflow } from './diagnostics';
