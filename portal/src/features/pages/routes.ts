// Public GET pages: content pages from the copy files, the catalogue-driven pricing and models
// pages, and the home page. Every page renders inside the one layout (views/partials).
import { Router } from 'express';
import type { PortalDeps } from '../../deps.js';
import type { Article } from './article.js';
import { publicModels } from './catalogue-view.js';
import { legalArticles } from './copy-legal.js';
import { productArticles } from './copy-product.js';

/** The router of the public pages. */
export function pagesRouter(deps: PortalDeps): Router {
  const router = Router();
  const models = publicModels(deps.catalogue);
  const exampleModel = models.find((m) => m.capabilities.includes('chat'))?.id ?? models[0]?.id ?? 'gpt-4o-mini';

  router.get('/', (_req, res) =>
    res.render('pages/home', { title: 'One API for every model', models, exampleModel, gatewayHint: deps.gatewayUrlHint }),
  );
  // Card top-ups are offered only where a payment processor is set up (docs/billing.md "Unconfigured").
  router.get('/pricing', (_req, res) =>
    res.render('pages/pricing', { title: 'Pricing', models, cardPayments: deps.billing.service.configured }),
  );
  router.get('/models-public', (_req, res) => res.render('pages/models', { title: 'Models', models }));

  const article = (path: string, page: Article, legalVersion?: string) =>
    router.get(path, (_req, res) => res.render('pages/article', { title: page.title, article: page, legalVersion }));
  for (const [path, page] of Object.entries(productArticles)) article(path, page);
  for (const [path, page] of Object.entries(legalArticles)) article(path, page, deps.settings.SVC_LEGAL_VERSION);
  return router;
}
