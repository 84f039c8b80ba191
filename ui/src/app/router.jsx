import { createBrowserRouter, Navigate } from "react-router";
import { Billing } from "../features/auth/routes/Billing.jsx";
import { ForgotPassword } from "../features/auth/routes/ForgotPassword.jsx";
import { Login } from "../features/auth/routes/Login.jsx";
import { Register } from "../features/auth/routes/Register.jsx";
import { ResetConfirm } from "../features/auth/routes/ResetConfirm.jsx";
import { Welcome } from "../features/connect/components/Welcome.jsx";
import { RequireSession } from "./guards.jsx";
import { AuthLayout } from "./layouts/AuthLayout.jsx";
import { MainLayout } from "./layouts/MainLayout.jsx";
import { ErrorPage } from "./routes/ErrorPage.jsx";
import { NotFound } from "./routes/NotFound.jsx";

// Screens past sign-in load on demand: each feature is a chunk of its own, so the
// sign-in page loads only the shell and the auth screens.
const screen = (load, name) => async () => ({
  Component: (await load())[name],
});
const dashboard = () => import("../features/dashboard/routes/Dashboard.jsx");
const files = () => import("../features/files/routes/index.js");
const shared = () => import("../features/shared/routes/SharedLink.jsx");
const sources = () => import("../features/sources/routes/index.js");
const profiles = () => import("../features/profiles/routes/index.js");
const tokens = () => import("../features/tokens/routes/index.js");
const mailboxes = () => import("../features/mailboxes/routes/index.js");
const logs = () => import("../features/logs/routes/index.js");
const god = () => import("../features/god/routes/index.js");
const organisation = () => import("../features/organisation/routes/index.js");
const bans = () => import("../features/bans/components/BansSection.jsx");
const connect = () => import("../features/connect/routes/index.js");

export const routes = [
  {
    path: "/auth",
    element: <AuthLayout />,
    errorElement: <ErrorPage />,
    children: [
      { index: true, element: <Navigate to="/auth/login" replace /> },
      { path: "login", element: <Login /> },
      { path: "register", element: <Register /> },
      { path: "forgot-password", element: <ForgotPassword /> },
      { path: "billing", element: <Billing /> },
      { path: "shared", lazy: screen(shared, "SharedLink") },
      { path: "shared/:token", lazy: screen(shared, "SharedLink") },
      { path: ":uid/:token", element: <ResetConfirm /> },
    ],
  },
  {
    element: <RequireSession />,
    hydrateFallbackElement: <p className="boot">Loading…</p>,
    children: [
      {
        element: <MainLayout />,
        children: [
          {
            errorElement: <ErrorPage />,
            children: [
              {
                index: true,
                lazy: async () => {
                  const { Dashboard } = await dashboard();
                  return {
                    Component: () => (
                      <>
                        <Dashboard />
                        <Welcome />
                      </>
                    ),
                  };
                },
              },
              { path: "fileviewer", lazy: screen(files, "FileViewer") },
              { path: "admin/sources", lazy: screen(sources, "SourceList") },
              {
                path: "admin/sources/create",
                lazy: screen(sources, "SourceCreate"),
              },
              {
                path: "admin/sources/callback",
                lazy: screen(sources, "SourceCallback"),
              },
              {
                path: "admin/sources/:pid",
                lazy: screen(sources, "SourceDetail"),
              },
              { path: "admin/profiles", lazy: screen(profiles, "ProfileList") },
              {
                path: "admin/profiles/create",
                lazy: screen(profiles, "ProfileCreate"),
              },
              {
                path: "admin/profiles/:pid",
                lazy: screen(profiles, "ProfileDetail"),
              },
              { path: "admin/tokens", lazy: screen(tokens, "TokenList") },
              {
                path: "admin/tokens/create",
                lazy: screen(tokens, "TokenCreate"),
              },
              {
                path: "admin/tokens/:pid",
                lazy: screen(tokens, "TokenDetail"),
              },
              {
                path: "admin/mailboxes",
                lazy: screen(mailboxes, "MailboxList"),
              },
              {
                path: "admin/mailboxes/create",
                lazy: screen(mailboxes, "MailboxCreate"),
              },
              {
                path: "admin/mailboxes/:pid",
                lazy: screen(mailboxes, "MailboxDetail"),
              },
              {
                path: "admin/mailboxes/:pid/runs",
                lazy: screen(mailboxes, "MailboxRuns"),
              },
              { path: "admin/god", lazy: screen(god, "OrganisationList") },
              {
                path: "admin/god/:pid/logs",
                lazy: screen(god, "OrganisationLogs"),
              },
              {
                path: "admin/organisation",
                lazy: async () => {
                  const [{ OrganisationSettings }, { BansSection }] =
                    await Promise.all([organisation(), bans()]);
                  return {
                    Component: () => (
                      <OrganisationSettings>
                        <BansSection />
                      </OrganisationSettings>
                    ),
                  };
                },
              },
              { path: "admin/logs", lazy: screen(logs, "LogList") },
              { path: "user-terms", lazy: screen(organisation, "UserTerms") },
              { path: "docs", lazy: screen(connect, "Documentation") },
              { path: "error", element: <ErrorPage /> },
              { path: "*", element: <NotFound /> },
            ],
          },
        ],
      },
    ],
  },
];

export const createAppRouter = () => createBrowserRouter(routes);
