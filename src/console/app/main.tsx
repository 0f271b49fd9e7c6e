/**
 * The console's shell: it asks GET /api/v1/session who the stored key names; with auth on and no
 * accepted key it renders the login and nothing else (no navigation, no data). Once in, the parts
 * this process runs (GET /api/v1/parts) decide which sections the navigation offers.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, storedKey, storeKey, whenUnauthenticated } from './api';
import { ErrorBox, Loading } from './components/ui';
import { Editor } from './pages/editor';
import { Login } from './pages/login';
import { ModelPage } from './pages/model';
import { ModelsPage } from './pages/models';
import { PredictPage } from './pages/predict';
import { SearchPage } from './pages/search';
import { VssModelPage, VssPage } from './pages/vss';
import { OperationPage } from './pages/vss-operation';
import { RegisterPage } from './pages/vss-register';
import { href, type Route, useRoute } from './router';
import type { Parts, Session } from './types';
import './styles.css';

type Gate =
  | { kind: 'checking' }
  | { kind: 'login'; error?: ApiError }
  | { kind: 'in'; session: Session }
  | { kind: 'down'; error: ApiError };

function App() {
  const [gate, setGate] = useState<Gate>({ kind: 'checking' });
  const route = useRoute();

  const check = async (key: string | null) => {
    try {
      const session = await get<Session>('/api/v1/session');
      setGate({ kind: 'in', session });
    } catch (err) {
      const error = err as ApiError;
      if (error.status === 401) {
        if (key !== null) storeKey(null);
        setGate({ kind: 'login', ...(key === null ? {} : { error }) });
      } else setGate({ kind: 'down', error });
    }
  };
  useEffect(() => {
    whenUnauthenticated(() => {
      storeKey(null);
      setGate({
        kind: 'login',
        error: new ApiError(401, 'UNAUTHENTICATED', 'the key is no longer accepted'),
      });
    });
    void check(storedKey());
  }, []);

  if (gate.kind === 'checking') return <Loading what="the session" />;
  if (gate.kind === 'down') {
    return (
      <main class="page">
        <h1>Lattice console</h1>
        <ErrorBox error={gate.error} what="The server did not answer the session check" />
      </main>
    );
  }
  if (gate.kind === 'login') {
    return <Login error={gate.error} onAccepted={(session) => setGate({ kind: 'in', session })} />;
  }
  return (
    <Shell
      session={gate.session}
      route={route}
      onSignOut={() => {
        storeKey(null);
        setGate({ kind: 'login' });
      }}
    />
  );
}

function Shell({ session, route, onSignOut }: { session: Session; route: Route; onSignOut: () => void }) {
  const [parts, setParts] = useState<Parts | undefined>(undefined);
  useEffect(() => {
    get<Parts>('/api/v1/parts').then(setParts, () => setParts(undefined));
  }, []);
  const section = route.parts[0] ?? '';
  const links: [string, string, boolean][] = [
    ['models', 'Model configs', parts?.orchestrator !== false],
    ['predict', 'Predict', parts?.orchestrator !== false],
    ['vss', 'vss', parts === undefined || parts.vss.admin],
    ['search', 'Search', parts === undefined || parts.vss.serving],
  ];
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          Lattice
        </a>
        <nav aria-label="Sections">
          {links
            .filter(([, , shown]) => shown)
            .map(([path, label]) => (
              <a key={path} href={href(path)} aria-current={section === path ? 'page' : undefined}>
                {label}
              </a>
            ))}
          <a href="/docs">API docs</a>
        </nav>
        <span class="who">
          {session.auth ? (
            <>
              {session.caller}{' '}
              <button type="button" class="link" onClick={onSignOut}>
                Sign out
              </button>
            </>
          ) : (
            'auth off'
          )}
        </span>
      </header>
      <main class="page" id="main">
        <Page route={route} parts={parts} />
      </main>
    </>
  );
}

function Page({ route, parts }: { route: Route; parts: Parts | undefined }) {
  const [section, a, b, c] = route.parts;
  switch (section) {
    case undefined:
      return parts !== undefined && !parts.orchestrator ? <VssPage /> : <ModelsPage />;
    case 'models':
      if (a === undefined) return <ModelsPage />;
      if (b === 'edit') return <Editor id={a} />;
      return <ModelPage id={a} />;
    case 'new-model':
      return <Editor id={undefined} />;
    case 'predict':
      return <PredictPage initial={a} />;
    case 'vss':
      if (a === 'operations' && b !== undefined) return <OperationPage id={b} />;
      if (a === 'register') return <RegisterPage />;
      if (a !== undefined && b !== undefined) return <VssModelPage entity={a} model={b} />;
      return <VssPage />;
    case 'search':
      return <SearchPage entity={a} model={b} variant={c} />;
    default:
      return (
        <>
          <h1>Not found</h1>
          <p>
            No page <code>{route.parts.join('/')}</code>. <a href="#/">Back to the start</a>.
          </p>
        </>
      );
  }
}

render(<App />, document.getElementById('root')!);
