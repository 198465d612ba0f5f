//! The PostgreSQL wire protocol endpoint (`vigie serve --pg ADDR`): the lake over DataFusion through `datafusion-postgres`, read-only, password-authenticated and bounded.
//!
//! Each connection gets its own SQL session ([`Guard`]) on the lake's latest
//! committed snapshot, so a connection reads one consistent snapshot and a
//! new connection sees new commits. On top of `datafusion-postgres`:
//!
//! * authentication: cleartext password (use TLS or a local socket in front
//!   when the port leaves the host) checked against the staff file's argon2
//!   hashes; only analyst and admin accounts may connect; failures are rate
//!   limited per user and per address;
//! * [`ReadOnlyHook`], first of the query hooks: every statement, simple or
//!   extended protocol, must be a query (SELECT, EXPLAIN, SHOW, cursors,
//!   transaction control) and its DataFusion plan must pass the same
//!   `SQLOptions` as the CLI (no DDL, DML or statements); `SET` is accepted
//!   only for the harmless session parameters clients send on connect
//!   (`application_name`, `extra_float_digits`, `DateStyle`, ...), never for
//!   `datafusion.*` options;
//! * [`Bounded`]: the per-query time limit applies to planning and to the
//!   streaming of results (the stream ends with SQLSTATE 57014), and every
//!   query is logged with who, what, how long and how many rows;
//! * the same size and nesting limits as every other path ([`super::bounds`]),
//!   one statement per query, and every connection served on the SQL runtime
//!   ([`super::bounds::runtime`]), apart from the dashboard's threads;
//! * the memory limit of the session's pool (operators spill beyond it), and
//!   at most `max_connections` authenticated connections, which bounds the
//!   total: a slot is taken only once the password is right (the next one is
//!   told SQLSTATE 53300, "too many connections"); a connection that has not
//!   authenticated within `handshake_timeout` is closed, and at most
//!   `max_handshakes` may be authenticating at once. No SQL session exists
//!   before authentication, and an analyst's session has no audit log
//!   ([`super::TableAccess`]).

use std::fmt::Debug;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use datafusion::common::ParamValues;
use datafusion::execution::context::SQLOptions;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Set, Statement};
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::hooks::cursor::CursorStatementHook;
use datafusion_postgres::hooks::set_show::SetShowHook;
use datafusion_postgres::hooks::transactions::TransactionStatementHook;
use datafusion_postgres::pgwire::api::auth::{
    DefaultServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use datafusion_postgres::pgwire::api::portal::Format;
use datafusion_postgres::pgwire::api::portal::Portal;
use datafusion_postgres::pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use datafusion_postgres::pgwire::api::results::{FieldInfo, QueryResponse, Response};
use datafusion_postgres::pgwire::api::stmt::QueryParser;
use datafusion_postgres::pgwire::api::store::PortalStore;
use datafusion_postgres::pgwire::api::{
    ClientInfo, ClientPortalStore, METADATA_USER, PgWireConnectionState, PgWireServerHandlers,
    PidSecretKeyGenerator, RandomPidSecretKeyGenerator, Type,
};
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::startup::Authentication;
use datafusion_postgres::pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use datafusion_postgres::{DfSessionService, QueryHook};
use futures::{Sink, SinkExt, StreamExt};

use super::{Guard, QueryLimits, TableAccess, bounds};
use crate::lake::Lake;
use crate::staff::limiter::LoginLimiter;
use crate::staff::users::{Role, dummy_hash, load_users, verify_password};

/// Settings of the endpoint.
#[derive(Debug, Clone)]
pub struct PgConfig {
    /// The lake directory.
    pub lake: PathBuf,
    /// The staff file (`users.json`); analyst and admin accounts may connect.
    pub users_file: PathBuf,
    /// Limits of each query (`max_rows` is not used: clients fetch what they need).
    pub limits: QueryLimits,
    /// Authenticated connections served at once; the next is refused with SQLSTATE 53300.
    pub max_connections: usize,
    /// Failed logins per user and per address within 15 minutes.
    pub login_max_failures: u32,
    /// Time a new connection has to authenticate before it is closed.
    pub handshake_timeout: Duration,
    /// Connections that may be authenticating at once; more are closed on arrival.
    pub max_handshakes: usize,
}

impl PgConfig {
    /// Defaults for a lake and a staff file.
    pub fn new(lake: PathBuf, users_file: PathBuf) -> PgConfig {
        PgConfig {
            lake,
            users_file,
            limits: QueryLimits::default(),
            max_connections: 16,
            login_max_failures: 5,
            handshake_timeout: Duration::from_secs(5),
            max_handshakes: 64,
        }
    }
}

/// SQLSTATE of a refused statement (`read_only_sql_transaction`).
const READ_ONLY: &str = "25006";

fn user_error(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        code.to_owned(),
        message,
    )))
}

/// An error that ends the connection (every error before authentication is one:
/// after a plain error the wire library would treat the client as ready for queries).
fn fatal(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".to_owned(),
        code.to_owned(),
        message,
    )))
}

/// SQLSTATE `too_many_connections`.
const TOO_MANY_CONNECTIONS: &str = "53300";

/// Session parameters clients set on connect; accepted (they change only how values are shown).
const HARMLESS_SET: [&str; 9] = [
    "application_name",
    "extra_float_digits",
    "datestyle",
    "intervalstyle",
    "bytea_output",
    "search_path",
    "client_encoding",
    "client_min_messages",
    "statement_timeout",
];

/// Why a statement may not run over the wire, or `None` when it may.
pub fn refusal(statement: &Statement) -> Option<String> {
    let verb = || {
        statement
            .to_string()
            .split_whitespace()
            .next()
            .unwrap_or("statement")
            .to_uppercase()
    };
    match statement {
        Statement::Query(_)
        | Statement::ShowVariable { .. }
        | Statement::ShowVariables { .. }
        | Statement::ShowStatus { .. }
        | Statement::ShowTables { .. }
        | Statement::ShowColumns { .. }
        | Statement::ShowCatalogs { .. }
        | Statement::ShowSchemas { .. }
        | Statement::ShowDatabases { .. }
        | Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Fetch { .. }
        | Statement::Close { .. }
        | Statement::Discard { .. }
        | Statement::Deallocate { .. } => None,
        Statement::Explain { statement, .. } => refusal(statement),
        Statement::Declare { stmts } => stmts
            .iter()
            .find(|d| d.for_query.is_none())
            .map(|_| "DECLARE is allowed only for a cursor over a query".to_owned()),
        Statement::Set(Set::SingleAssignment {
            scope: None,
            hivevar: false,
            variable,
            ..
        }) => {
            let name = variable.to_string().to_lowercase();
            (!HARMLESS_SET.contains(&name.as_str())).then(|| {
                format!("SET {name} is not allowed: the lake is read-only and its limits are fixed")
            })
        }
        Statement::Set(Set::SetTimeZone { local: false, .. }) => None,
        Statement::Set(_) => {
            Some("this SET is not allowed: the lake is read-only and its limits are fixed".into())
        }
        _ => Some(format!("{} is not allowed: the lake is read-only", verb())),
    }
}

/// Checks a query text before the wire's own parser sees it: its size and,
/// with DataFusion's parser, its nesting and statements (what only DataFusion
/// parses, `CREATE EXTERNAL TABLE` and `COPY ... TO`, gets the same messages as
/// the CLI; several statements in one text are refused). Text DataFusion cannot
/// parse (what the wire's own parser handles, such as `ABORT`) is left to it once
/// its tokens hold one statement and no deeper nesting of brackets than the limit
/// (the wire runs every statement of a text: `ABORT; SELECT ...` ran its queries
/// past these checks), and every parsed statement still meets [`ReadOnlyHook`].
pub fn precheck(sql: &str) -> PgWireResult<()> {
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    bounds::check_size(sql).map_err(|e| user_error(PROGRAM_LIMIT, e.to_string()))?;
    let Ok(statements) = DFParser::parse_sql_with_dialect(sql, &PostgreSqlDialect {}) else {
        return lexical_precheck(sql);
    };
    let statements: Vec<DFStatement> = statements.into_iter().collect();
    if statements.len() > 1 {
        return Err(user_error(
            READ_ONLY,
            format!(
                "refused: {} statements in one query; send one statement at a time",
                statements.len()
            ),
        ));
    }
    bounds::check_shape(&statements).map_err(|e| user_error(PROGRAM_LIMIT, e.to_string()))?;
    for s in &statements {
        let why = match s {
            DFStatement::Statement(st) => refusal(st),
            DFStatement::CreateExternalTable(_) => {
                Some("CREATE EXTERNAL TABLE is not allowed: the lake is read-only".to_owned())
            }
            DFStatement::CopyTo(_) => Some("COPY is not allowed: the lake is read-only".to_owned()),
            DFStatement::Explain(_) => None,
            _ => Some("only queries are allowed".to_owned()),
        };
        if let Some(why) = why {
            return Err(user_error(READ_ONLY, why));
        }
    }
    Ok(())
}

/// What [`precheck`] asks of a text DataFusion cannot parse, from its tokens alone: one
/// statement, brackets nested no deeper than [`bounds::MAX_EXPR_DEPTH`].
fn lexical_precheck(sql: &str) -> PgWireResult<()> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize()
        .map_err(|e| user_error(SYNTAX_ERROR, format!("the query cannot be read: {e}")))?;
    let (mut statements, mut open, mut depth, mut deepest) = (0usize, false, 0usize, 0usize);
    for t in &tokens {
        match t {
            Token::Whitespace(_) => continue,
            Token::SemiColon => {
                open = false;
                continue;
            }
            Token::LParen | Token::LBracket | Token::LBrace => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Token::RParen | Token::RBracket | Token::RBrace => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !open {
            open = true;
            statements += 1;
        }
    }
    if statements > 1 {
        return Err(user_error(
            READ_ONLY,
            format!("refused: {statements} statements in one query; send one statement at a time"),
        ));
    }
    if deepest > bounds::MAX_EXPR_DEPTH {
        return Err(user_error(
            PROGRAM_LIMIT,
            format!(
                "refused: brackets nested more than {} levels deep",
                bounds::MAX_EXPR_DEPTH
            ),
        ));
    }
    Ok(())
}

/// SQLSTATE `syntax_error`.
const SYNTAX_ERROR: &str = "42601";

/// SQLSTATE `program_limit_exceeded` (a query too long or too deeply nested).
const PROGRAM_LIMIT: &str = "54000";

/// A connection's SQL session: the wire service, and the deadline its planner puts in plans.
pub struct Session {
    service: Arc<DfSessionService>,
    deadline: Arc<crate::lake::sql::SessionDeadline>,
    ctx: Arc<SessionContext>,
    /// The connection reads one snapshot from login to the end: no vacuum deletes its files.
    _lease: Option<crate::lake::Lease>,
}

impl Drop for Session {
    /// `pg_catalog`'s schema holds the session's catalog list, in which it is registered: a cycle
    /// that kept every connection's catalogs, tables and static pg tables alive after it closed
    /// (about 5.5 MB a connection, measured). Taking the schema out breaks it.
    fn drop(&mut self) {
        if let Some(catalog) = self.ctx.catalog(PG_CATALOG_DB) {
            let _ = catalog.deregister_schema("pg_catalog", true);
        }
    }
}

/// The catalog `pg_catalog` is registered in: the lake's.
const PG_CATALOG_DB: &str = crate::lake::sql::CATALOG;

/// The connection's SQL session, made once the client has authenticated.
type SessionCell = Arc<OnceLock<Session>>;

fn session_of(cell: &SessionCell) -> PgWireResult<&Session> {
    cell.get().ok_or_else(|| {
        fatal(
            "28000",
            "authenticate first: this connection has no SQL session".into(),
        )
    })
}

/// The extended protocol's parser, with [`precheck`] first.
pub struct CheckedParser {
    session: SessionCell,
}

#[async_trait]
impl QueryParser for CheckedParser {
    type Statement = <DfSessionService as ExtendedQueryHandler>::Statement;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        precheck(sql)?;
        let parser = session_of(&self.session)?.service.query_parser();
        parser.parse_sql(client, sql, types).await
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        session_of(&self.session)?
            .service
            .query_parser()
            .get_parameter_types(stmt)
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        session_of(&self.session)?
            .service
            .query_parser()
            .get_result_schema(stmt, column_format)
    }
}

/// The first query hook: refuses anything but reads, on both protocols.
#[derive(Debug)]
pub struct ReadOnlyHook;

impl ReadOnlyHook {
    /// The statement's own check, then the plan's (a query that plans to DDL
    /// or DML, such as `SELECT ... INTO`, is refused like the CLI refuses it).
    async fn check(statement: &Statement, ctx: &SessionContext) -> PgWireResult<()> {
        if let Some(why) = refusal(statement) {
            return Err(user_error(READ_ONLY, why));
        }
        let query = match statement {
            Statement::Query(_) | Statement::Explain { .. } => Some(statement.clone()),
            Statement::Declare { stmts } => stmts
                .iter()
                .find_map(|d| d.for_query.clone())
                .map(Statement::Query),
            _ => None,
        };
        if let Some(q) = query
            && let Ok(plan) = ctx
                .state()
                .statement_to_plan(DFStatement::Statement(Box::new(q)))
                .await
        {
            SQLOptions::new()
                .with_allow_ddl(false)
                .with_allow_dml(false)
                .with_allow_statements(false)
                .verify_plan(&plan)
                .map_err(|e| user_error(READ_ONLY, format!("refused: {e}")))?;
        }
        Ok(())
    }
}

#[async_trait]
impl QueryHook for ReadOnlyHook {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        ReadOnlyHook::check(statement, session_context)
            .await
            .err()
            .map(Err)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        ReadOnlyHook::check(statement, session_context)
            .await
            .err()
            .map(Err)
    }

    async fn handle_extended_query(
        &self,
        _statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        _session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        None
    }
}

fn timeout_error(limit: Duration) -> PgWireError {
    user_error(
        "57014",
        format!("canceling statement: it ran longer than Vigie's limit of {limit:?}"),
    )
}

/// What is logged about one query when it ends.
struct QueryLog {
    who: String,
    query: String,
    started: Instant,
}

impl QueryLog {
    /// Logs a query that failed after `rows` rows and gives the client its error. The session's own
    /// deadline (which stops plans inside DataFusion) and the wire's timer race at the limit: either
    /// way the client gets PostgreSQL's statement-timeout error (57014); any other error is
    /// logged as `otherwise`.
    fn failed(&self, rows: u64, e: PgWireError, limit: Duration, otherwise: &str) -> PgWireError {
        if e.to_string().contains(crate::lake::sql::DEADLINE_PASSED) {
            self.done(rows, "timeout");
            timeout_error(limit)
        } else {
            self.done(rows, otherwise);
            e
        }
    }

    fn done(&self, rows: u64, outcome: &str) {
        tracing::info!(
            target: "vigie::sql",
            who = %self.who,
            query = %self.query,
            ms = self.started.elapsed().as_millis() as u64,
            rows,
            outcome,
            via = "pg",
            "analyst query"
        );
    }
}

/// Wraps a result stream: stops it with an error at the deadline, counts its rows and logs the query when it ends.
fn bounded_response(
    r: Response,
    deadline: tokio::time::Instant,
    limit: Duration,
    log: QueryLog,
) -> Response {
    let Response::Query(q) = r else {
        log.done(0, "ok");
        return r;
    };
    let tag = q.command_tag().to_owned();
    let schema = q.row_schema();
    let QueryResponse { data_rows, .. } = q;
    let rows = futures::stream::unfold(
        (data_rows, 0u64, Some(log)),
        move |(mut stream, n, log)| async move {
            let log = log?;
            match tokio::time::timeout_at(deadline, stream.next()).await {
                Ok(Some(Ok(row))) => Some((Ok(row), (stream, n + 1, Some(log)))),
                Ok(Some(Err(e))) => {
                    let e = log.failed(n, e, limit, "error");
                    Some((Err(e), (stream, n, None)))
                }
                Ok(None) => {
                    log.done(n, "ok");
                    None
                }
                Err(_) => {
                    log.done(n, "timeout");
                    Some((Err(timeout_error(limit)), (stream, n, None)))
                }
            }
        },
    );
    let mut out = QueryResponse::new(schema, rows);
    out.set_command_tag(&tag);
    Response::Query(out)
}

/// `datafusion-postgres`'s session service with Vigie's time limit and query log.
pub struct Bounded {
    session: SessionCell,
    parser: Arc<CheckedParser>,
    limit: Duration,
}

impl Bounded {
    fn log<C: ClientInfo>(client: &C, query: &str) -> QueryLog {
        QueryLog {
            who: client
                .metadata()
                .get(METADATA_USER)
                .cloned()
                .unwrap_or_default(),
            query: query.to_owned(),
            started: Instant::now(),
        }
    }
}

#[async_trait]
impl SimpleQueryHandler for Bounded {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(&self.session)?;
        let inner = &session.service;
        let log = Bounded::log(client, query);
        if let Err(e) = precheck(query) {
            log.done(0, "refused");
            return Err(e);
        }
        session.deadline.start(self.limit);
        let deadline = tokio::time::Instant::now() + self.limit;
        let started = log.started;
        let planned = tokio::time::timeout_at(
            deadline,
            SimpleQueryHandler::do_query(inner.as_ref(), client, query),
        )
        .await;
        let responses = match planned {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return Err(log.failed(0, e, self.limit, "refused or failed"));
            }
            Err(_) => {
                log.done(0, "timeout");
                return Err(timeout_error(self.limit));
            }
        };
        Ok(responses
            .into_iter()
            .map(|r| {
                let l = QueryLog {
                    who: log.who.clone(),
                    query: log.query.clone(),
                    started,
                };
                bounded_response(r, deadline, self.limit, l)
            })
            .collect())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Bounded {
    type Statement = <DfSessionService as ExtendedQueryHandler>::Statement;
    type QueryParser = CheckedParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(&self.session)?;
        let inner = &session.service;
        session.deadline.start(self.limit);
        let log = Bounded::log(client, &portal.statement.statement.0);
        let deadline = tokio::time::Instant::now() + self.limit;
        match tokio::time::timeout_at(
            deadline,
            ExtendedQueryHandler::do_query(inner.as_ref(), client, portal, max_rows),
        )
        .await
        {
            Ok(Ok(r)) => Ok(bounded_response(r, deadline, self.limit, log)),
            Ok(Err(e)) => Err(log.failed(0, e, self.limit, "refused or failed")),
            Err(_) => {
                log.done(0, "timeout");
                Err(timeout_error(self.limit))
            }
        }
    }
}

/// Password authentication against the staff file (analyst and admin only);
/// once it succeeds, the connection's slot and SQL session.
pub struct PasswordStartup {
    cfg: Arc<PgConfig>,
    limiter: Arc<LoginLimiter>,
    peer: SocketAddr,
    parameters: DefaultServerParameterProvider,
    keys: RandomPidSecretKeyGenerator,
    /// Slots of authenticated connections, shared by the endpoint.
    slots: Arc<tokio::sync::Semaphore>,
    /// This connection's slot once authenticated; its place among handshakes before.
    permit: Mutex<Option<tokio::sync::OwnedSemaphorePermit>>,
    session: SessionCell,
    authenticated: Arc<AtomicBool>,
}

impl PasswordStartup {
    /// The role of `user` when `password` is right and the role may connect
    /// (argon2, constant work for unknown users).
    fn check(users_file: &std::path::Path, user: &str, password: &str) -> Option<Role> {
        let users = load_users(users_file).unwrap_or_default();
        match users.iter().find(|u| u.username == user) {
            Some(u) => (verify_password(&u.hash, password)
                && matches!(u.role, Role::Analyst | Role::Admin))
            .then_some(u.role),
            None => {
                let _ = verify_password(dummy_hash(), password);
                None
            }
        }
    }

    /// Takes a slot and opens the SQL session of an authenticated `role`.
    async fn admit(&self, role: Role) -> PgWireResult<()> {
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            tracing::warn!(target: "vigie::sql", peer = %self.peer, "pg connection refused: too many connections");
            return Err(fatal(
                TOO_MANY_CONNECTIONS,
                format!(
                    "sorry, too many connections: Vigie serves at most {} at once",
                    self.cfg.max_connections
                ),
            ));
        };
        let access = match role {
            Role::Admin => TableAccess::All,
            _ => TableAccess::WithoutAudit,
        };
        let service = session_service(&self.cfg, access)
            .await
            .map_err(|e| fatal("58000", format!("the SQL session could not start: {e}")))?;
        if self.session.set(service).is_err() {
            return Err(fatal("08P01", "already authenticated".into()));
        }
        // The handshake's place is given back; the slot is held until the connection ends.
        *self.permit.lock().unwrap_or_else(|e| e.into_inner()) = Some(slot);
        self.authenticated.store(true, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait]
impl StartupHandler for PasswordStartup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                client
                    .send(PgWireBackendMessage::Authentication(
                        Authentication::CleartextPassword,
                    ))
                    .await?;
            }
            PgWireFrontendMessage::PasswordMessageFamily(pwd) => {
                if self.authenticated.load(Ordering::SeqCst) {
                    return Err(fatal("08P01", "already authenticated".into()));
                }
                let password = pwd.into_password()?.password;
                let user = client
                    .metadata()
                    .get(METADATA_USER)
                    .cloned()
                    .unwrap_or_default();
                // A name longer than any account's is keyed by its start (the limiter keeps its
                // keys).
                let name: String = user
                    .chars()
                    .take(crate::staff::limiter::MAX_KEY_NAME)
                    .collect();
                let keys = [
                    format!("pg-user:{name}"),
                    format!("pg-ip:{}", self.peer.ip()),
                ];
                // Logins on a key are judged one after the other: sent together, they cannot
                // all pass the limit before the first failure is counted.
                let keys_turn = self.limiter.turn(&keys).await;
                if self.limiter.blocked(&keys).is_some() {
                    return Err(fatal(
                        "28P01",
                        "too many failed logins: try again later".into(),
                    ));
                }
                let file = self.cfg.users_file.clone();
                let who = user.clone();
                // Judged to the end on a task of its own, holding the keys' turn and a check's
                // slot: a handshake dropped mid-check (its timeout) still has its failure
                // counted, and frees its turn and slot only when its check is done.
                let limiter = Arc::clone(&self.limiter);
                let role = tokio::spawn(async move {
                    let _turn = keys_turn;
                    let check = limiter.check_turn().await;
                    let role = tokio::task::spawn_blocking(move || {
                        PasswordStartup::check(&file, &who, &password)
                    })
                    .await
                    .unwrap_or(None);
                    drop(check);
                    match role {
                        Some(_) => limiter.reset(&keys[0]),
                        None => limiter.fail(&keys),
                    }
                    role
                })
                .await
                .unwrap_or(None);
                let Some(role) = role else {
                    tracing::warn!(target: "vigie::sql", user, peer = %self.peer, "pg login refused");
                    return Err(PgWireError::InvalidPassword(user));
                };
                self.admit(role).await?;
                let (pid, secret) = self.keys.generate(client);
                client.set_pid_and_secret_key(pid, secret);
                finish_authentication(client, &self.parameters).await?;
                tracing::info!(target: "vigie::sql", user, peer = %self.peer, "pg login");
            }
            _ => {}
        }
        Ok(())
    }
}

/// The handlers of one connection.
pub struct Connection {
    service: Arc<Bounded>,
    startup: Arc<PasswordStartup>,
}

impl PgWireServerHandlers for Connection {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.service.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.service.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }
}

/// Why the endpoint could not serve a connection.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error(transparent)]
    Sql(#[from] super::SqlError),
    #[error("pg_catalog: {0}")]
    Catalog(String),
}

/// The SQL session of an authenticated connection, on the latest snapshot.
async fn session_service(cfg: &PgConfig, access: TableAccess) -> Result<Session, PgError> {
    let lake = Lake::open_existing(&cfg.lake).map_err(super::SqlError::from)?;
    let (snapshot, lease) = lake.held_snapshot(None).map_err(super::SqlError::from)?;
    let guard = Guard::with_access(snapshot, cfg.limits, access).await?;
    let ctx = Arc::new(guard.context().clone());
    datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog(
        &ctx,
        PG_CATALOG_DB,
        datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider,
    )
    .map_err(|e| PgError::Catalog(e.to_string()))?;
    let hooks: Vec<Arc<dyn QueryHook>> = vec![
        Arc::new(ReadOnlyHook),
        Arc::new(CursorStatementHook),
        Arc::new(SetShowHook),
        Arc::new(TransactionStatementHook),
    ];
    Ok(Session {
        service: Arc::new(DfSessionService::new_with_hooks(Arc::clone(&ctx), hooks)),
        deadline: Arc::clone(guard.deadline()),
        ctx,
        _lease: lease,
    })
}

/// The handlers of a new connection (no SQL session until it authenticates).
fn connection(
    cfg: &Arc<PgConfig>,
    limiter: Arc<LoginLimiter>,
    peer: SocketAddr,
    slots: Arc<tokio::sync::Semaphore>,
    handshake: tokio::sync::OwnedSemaphorePermit,
) -> Connection {
    let mut parameters = DefaultServerParameterProvider::default();
    parameters.is_superuser = false;
    parameters.default_transaction_read_only = true;
    parameters.search_path = "lake".to_owned();
    let session: SessionCell = Arc::new(OnceLock::new());
    Connection {
        service: Arc::new(Bounded {
            parser: Arc::new(CheckedParser {
                session: Arc::clone(&session),
            }),
            session: Arc::clone(&session),
            limit: cfg.limits.timeout,
        }),
        startup: Arc::new(PasswordStartup {
            cfg: Arc::clone(cfg),
            limiter,
            peer,
            parameters,
            keys: RandomPidSecretKeyGenerator::default(),
            slots,
            permit: Mutex::new(Some(handshake)),
            session,
            authenticated: Arc::new(AtomicBool::new(false)),
        }),
    }
}

/// Serves connections on a bound listener until `shutdown` resolves; each
/// connection runs on the SQL runtime.
pub async fn serve(
    listener: tokio::net::TcpListener,
    cfg: PgConfig,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let cfg = Arc::new(cfg);
    let limiter = Arc::new(LoginLimiter::new(
        cfg.login_max_failures,
        Duration::from_secs(15 * 60),
    ));
    let slots = Arc::new(tokio::sync::Semaphore::new(cfg.max_connections.max(1)));
    let handshakes = Arc::new(tokio::sync::Semaphore::new(cfg.max_handshakes.max(1)));
    let runtime = bounds::runtime().map_err(std::io::Error::other)?;
    tokio::pin!(shutdown);
    loop {
        let (socket, peer) = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "pg accept failed");
                    continue;
                }
            },
        };
        let Ok(handshake) = handshakes.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "pg connection closed: too many connections authenticating");
            drop(socket);
            continue;
        };
        let socket = match socket.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "pg connection lost");
                continue;
            }
        };
        let handlers = connection(
            &cfg,
            Arc::clone(&limiter),
            peer,
            Arc::clone(&slots),
            handshake,
        );
        let authenticated = Arc::clone(&handlers.startup.authenticated);
        let timeout = cfg.handshake_timeout;
        runtime.spawn(async move {
            let socket = match tokio::net::TcpStream::from_std(socket) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "pg connection lost");
                    return;
                }
            };
            let conn = guarded(socket, Arc::new(handlers));
            tokio::pin!(conn);
            let ended = tokio::select! {
                ended = &mut conn => ended,
                _ = tokio::time::sleep(timeout) => {
                    if !authenticated.load(Ordering::SeqCst) {
                        tracing::info!(%peer, "pg connection closed: no authentication within {timeout:?}");
                        return;
                    }
                    conn.await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(%peer, error = %e, "pg connection ended");
            }
        });
    }
}

/// Longest frontend message a connection may send (a query's text is held to 64 KiB, a bind
/// parameter to this): the wire library would read messages of up to 1 GiB, and a query's
/// parameters are held several times over while they are bound.
pub const MAX_FRONTEND_MESSAGE: usize = 1 << 20;

/// Longest untyped message before the session starts (the wire library's own bound).
const MAX_STARTUP_MESSAGE: usize = 10_000;

/// The codes of the requests for TLS and for GSS encryption, sent before the startup message.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// The frames of a client's byte stream, followed as they arrive: untyped (length, then a code)
/// until the startup message, typed (a byte, then a length) after it.
#[derive(Debug, Default)]
struct Frames {
    typed: bool,
    head: [u8; 8],
    have: usize,
    left: usize,
    typed_after: bool,
}

impl Frames {
    /// Follows `bytes`; an error names a frame longer than the bounds, before its body is read.
    fn feed(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() {
            if self.left > 0 {
                let k = self.left.min(bytes.len());
                self.left -= k;
                bytes = &bytes[k..];
                if self.left == 0 {
                    self.typed |= self.typed_after;
                }
                continue;
            }
            let need = if self.typed { 5 } else { 8 };
            let k = (need - self.have).min(bytes.len());
            self.head[self.have..self.have + k].copy_from_slice(&bytes[..k]);
            self.have += k;
            bytes = &bytes[k..];
            if self.have < need {
                break;
            }
            self.have = 0;
            let word = |at: usize| {
                u32::from_be_bytes([
                    self.head[at],
                    self.head[at + 1],
                    self.head[at + 2],
                    self.head[at + 3],
                ]) as usize
            };
            if self.typed {
                let len = word(1);
                if !(4..=MAX_FRONTEND_MESSAGE + 4).contains(&len) {
                    return Err(format!(
                        "a message of {len} bytes (type {:?}); at most {MAX_FRONTEND_MESSAGE}",
                        char::from(self.head[0])
                    ));
                }
                self.left = len - 4;
            } else {
                let len = word(0);
                if !(8..=MAX_STARTUP_MESSAGE).contains(&len) {
                    return Err(format!("a startup message of {len} bytes"));
                }
                self.left = len - 8;
                // Protocol 3.x: the startup message itself (SSL and GSS requests and cancels
                // have codes of their own and stay untyped).
                self.typed_after = word(4) >> 16 == 3;
                if self.left == 0 {
                    self.typed |= self.typed_after;
                }
            }
        }
        Ok(())
    }
}

/// Serves one connection through a relay that checks the length of every message the client
/// sends before passing it on ([`MAX_FRONTEND_MESSAGE`]), and closes the connection on a longer
/// one; the wire library serves the other end of a socket pair.
async fn guarded(
    mut client: tokio::net::TcpStream,
    handlers: Arc<Connection>,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let peer = client.peer_addr().ok();
    // As the wire library sets it on the sockets it serves itself.
    let _ = client.set_nodelay(true);
    // Encryption requests are answered here, as the wire library answers them on a TCP socket
    // without TLS ("N": go on in plain text); on the socket pair it would not expect them.
    let mut first = [0u8; 8];
    loop {
        client.read_exact(&mut first).await?;
        let code = u32::from_be_bytes([first[4], first[5], first[6], first[7]]);
        if first[..4] == 8u32.to_be_bytes() && (code == SSL_REQUEST || code == GSSENC_REQUEST) {
            client.write_all(b"N").await?;
            continue;
        }
        break;
    }
    let (mut client_r, mut client_w) = client.into_split();
    let (ours, theirs) = tokio::net::UnixStream::pair()?;
    let (mut ours_r, mut ours_w) = ours.into_split();
    let server = datafusion_postgres::pgwire::tokio::process_socket_unix(theirs, handlers);
    let c2s = async move {
        let mut frames = Frames::default();
        if let Err(why) = frames.feed(&first) {
            tracing::warn!(?peer, "pg connection closed: {why}");
            return;
        }
        if ours_w.write_all(&first).await.is_err() {
            return;
        }
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match client_r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if let Err(why) = frames.feed(&buf[..n]) {
                tracing::warn!(?peer, "pg connection closed: {why}");
                break;
            }
            if ours_w.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        // The wire library sees the end of the client's input.
        drop(ours_w);
    };
    let s2c = async move {
        let _ = tokio::io::copy(&mut ours_r, &mut client_w).await;
        let _ = client_w.shutdown().await;
    };
    let relay = async move {
        tokio::pin!(c2s);
        tokio::pin!(s2c);
        tokio::select! {
            // The library closed its side (a fatal error, the end of a session): the client's
            // input is dropped with `c2s` when this block ends, so the library also sees the end
            // of its input and returns, whatever state it was waiting in.
            _ = &mut s2c => {}
            _ = &mut c2s => (&mut s2c).await,
        }
    };
    let (ended, ()) = tokio::join!(server, relay);
    ended
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn refused(sql: &str) -> Option<String> {
        let st = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        refusal(&st[0])
    }

    fn typed(kind: u8, body: usize) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body + 4) as u32).to_be_bytes());
        m.extend(std::iter::repeat_n(b'x', body));
        m
    }

    fn untyped(code: u32, body: usize) -> Vec<u8> {
        let mut m = ((body + 8) as u32).to_be_bytes().to_vec();
        m.extend_from_slice(&code.to_be_bytes());
        m.extend(std::iter::repeat_n(0u8, body));
        m
    }

    #[test]
    fn frames_longer_than_the_bound_are_refused_before_their_body() {
        let ssl = untyped(SSL_REQUEST, 0);
        let startup = untyped(196_608, 40);
        let mut ok = [ssl, startup, typed(b'p', 20), typed(b'Q', 64 << 10)].concat();
        ok.extend(typed(b'S', 0));
        ok.extend(typed(b'B', MAX_FRONTEND_MESSAGE));
        // Whole, and one byte at a time.
        assert_eq!(Frames::default().feed(&ok), Ok(()));
        let mut f = Frames::default();
        for b in &ok {
            assert_eq!(f.feed(std::slice::from_ref(b)), Ok(()));
        }
        // One byte over: refused at its header.
        let big = typed(b'B', MAX_FRONTEND_MESSAGE + 1);
        let mut f = Frames::default();
        assert_eq!(f.feed(&ok), Ok(()));
        assert!(f.feed(&big[..5]).is_err());
        // A query of 200 MB announced by a five-byte header.
        let mut f = Frames::default();
        let mut start = untyped(196_608, 40);
        start.extend_from_slice(&[b'Q', 0x0b, 0xeb, 0xc2, 0x04]);
        assert!(f.feed(&start).is_err());
        // A startup message past the library's bound.
        assert!(
            Frames::default()
                .feed(&untyped(196_608, 20_000)[..8])
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_connection_s_session_is_freed_when_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        crate::catalog::open(dir.path()).unwrap();
        let cfg = PgConfig::new(dir.path().to_path_buf(), dir.path().join("users.json"));
        let session = session_service(&cfg, crate::sql::TableAccess::All)
            .await
            .unwrap();
        assert!(
            session
                .ctx
                .catalog(PG_CATALOG_DB)
                .and_then(|c| c.schema("pg_catalog"))
                .is_some()
        );
        let catalogs = Arc::downgrade(&session.ctx.state().catalog_list().clone());
        let context = Arc::downgrade(&session.ctx);
        drop(session);
        assert!(
            context.upgrade().is_none(),
            "the session context outlives its connection"
        );
        assert!(
            catalogs.upgrade().is_none(),
            "the catalog list outlives its connection"
        );
    }

    #[test]
    fn only_reads_and_harmless_settings_pass() {
        for ok in [
            "SELECT 1",
            "EXPLAIN SELECT 1",
            "SHOW search_path",
            "BEGIN",
            "COMMIT",
            "ROLLBACK",
            "SET application_name = 'psql'",
            "SET extra_float_digits = 3",
            "SET TIME ZONE 'UTC'",
            "DECLARE c CURSOR FOR SELECT 1",
            "FETCH 10 FROM c",
            "CLOSE c",
        ] {
            assert_eq!(refused(ok), None, "{ok}");
        }
        for bad in [
            "CREATE TABLE t (a INT)",
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET a = 1",
            "DELETE FROM t",
            "DROP TABLE events",
            "COPY events TO '/tmp/x'",
            "SET datafusion.execution.batch_size = 1",
            "SET SESSION AUTHORIZATION postgres",
            "EXPLAIN ANALYZE INSERT INTO t VALUES (1)",
            "ALTER TABLE events ADD COLUMN x INT",
            "CREATE VIEW v AS SELECT 1",
            "TRUNCATE events",
        ] {
            let why = refused(bad).unwrap_or_else(|| panic!("{bad} passed"));
            assert!(why.contains("not allowed"), "{bad}: {why}");
        }
    }

    #[test]
    fn the_precheck_catches_datafusion_statements() {
        assert!(precheck("SELECT 1").is_ok());
        assert!(precheck("SELECT 1; SELECT 2").is_err());
        assert!(precheck(&format!("SELECT 1{}", "+1".repeat(2000))).is_err());
        for bad in [
            "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/etc/passwd'",
            "COPY (SELECT 1) TO '/tmp/x.csv'",
            "SELECT 1; DROP TABLE events",
            // DataFusion cannot parse ABORT; the wire runs what follows it.
            "ABORT; SELECT 1",
            "SELECT 1; ABORT",
            &format!("ABORT; SELECT (1{}) AS deep", "+1".repeat(2000)),
            &format!("ABORT {}1{}", "(".repeat(300), ")".repeat(300)),
            "ABORT 'unterminated",
        ] {
            assert!(precheck(bad).is_err(), "{bad}");
        }
        // Alone, or with a closing semicolon, what only the wire reads is left to it.
        for fine in ["ABORT", "ABORT;", " ABORT ; ", "-- c\nABORT"] {
            assert!(precheck(fine).is_ok(), "{fine}");
        }
    }
}
