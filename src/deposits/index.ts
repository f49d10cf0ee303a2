/** Area C deposits (issue 7): the DepositService, the DepositWorkflow activities, the field readers and pages. */
export { createDepositService } from './service';
export { createDepositActivities } from './activities';
export * from './contract';
export { resultObject, encodeResult, TOKEN_TYPE, type Deposit, type DepositState } from './store';
