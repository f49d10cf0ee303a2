/**
 * The façade's reference documentation: `GET /docs` renders `docs/openapi.yaml` with Swagger UI, served
 * from the `swagger-ui-dist` package on this host (no CDN: works offline).
 *
 *   GET /docs                      HTML page (Swagger UI)
 *   GET /docs/openapi.yaml         the OpenAPI 3.1 document, as in the repository
 *   GET /docs/assets/<file>        Swagger UI's CSS/JS (a fixed allow-list) and the page's initializer
 *
 * Files are read once, on first request, and kept in memory. Unknown asset names are 404.
 */
import Router from '@koa/router';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FacadeState } from './context';

/** Where the OpenAPI document lives (repository root `docs/openapi.yaml`). */
export const OPENAPI_DOCUMENT_PATH = path.join(__dirname, '..', 'docs', 'openapi.yaml');

/** Swagger UI files served under /docs/assets, with their content types. */
const SWAGGER_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

const INITIALIZER = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: '/docs/openapi.yaml',
    dom_id: '#swagger-ui',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
  });
};
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Payments platform API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
  <style>body { margin: 0; } .swagger-ui .topbar { display: none; }</style>
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/assets/initializer.js"></script>
</body>
</html>
`;


function swaggerUiDirectory(): string {
  return path.dirname(require.resolve('swagger-ui-dist/package.json'));
}

/** The /docs routes (mounted at the root of the façade, like /healthz). */
export function docsRouter(): Router<FacadeState> {
  const router = new Router<FacadeState>();
  // The document and the Swagger UI assets, read once per router (a handful of files; they never change at run time).
  const files = new Map<string, Buffer>();
  const cached = (file: string): Buffer => {
    let content = files.get(file);
    if (!content) files.set(file, (content = readFileSync(file)));
    return content;
  };
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });
  router.get('/docs/openapi.yaml', (ctx) => {
    ctx.type = 'application/yaml; charset=utf-8';
    ctx.body = cached(OPENAPI_DOCUMENT_PATH);
  });
  router.get('/docs/assets/:file', (ctx) => {
    const file = ctx.params.file ?? '';
    if (file === 'initializer.js') {
      ctx.type = 'application/javascript; charset=utf-8';
      ctx.body = INITIALIZER;
      return;
    }
    const type = Object.hasOwn(SWAGGER_ASSETS, file) ? SWAGGER_ASSETS[file] : undefined;
    if (!type) {
      ctx.status = 404;
      ctx.body = { success: false, code: 404, message: 'Not Found' };
      return;
    }
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = cached(path.join(swaggerUiDirectory(), file));
  });
  return router;
}
