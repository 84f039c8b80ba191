import { lazy, Suspense, useEffect } from "react";
import { createBrowserRouter, Navigate, Outlet, RouterProvider, useLocation } from "react-router";
import { SWRConfig } from "swr";
import { fetcher, getSession } from "../lib/api.js";
import { NotificationsProvider } from "../components/notifications.jsx";
import { AuthLayout } from "./AuthLayout.jsx";
import { MainLayout } from "./MainLayout.jsx";
import { LoginPage } from "../features/auth/LoginPage.jsx";
import { BillingPage, ForgotPasswordPage, RegisterPage, ResetPage, SharedPage } from "../features/auth/pages.jsx";
import { FileViewer } from "../features/files/FileViewer.jsx";

const Dashboard = lazy(() => import("../features/dashboard/Dashboard.jsx"));
const Admin = lazy(() => import("../features/admin/Admin.jsx"));

/** Main-layout routes need a signed-in user. */
function RequireSession() {
  const location = useLocation();
  if (!getSession()) return <Navigate to="/auth/login" replace state={{ from: location.pathname }} />;
  return <Outlet />;
}

/** A signed-in non-admin opening / lands on the file viewer. */
function Home() {
  const session = getSession();
  if (!session || !session.is_admin) return <Navigate to="/fileviewer" replace />;
  return <Dashboard />;
}

function ScrollReset() {
  const { pathname } = useLocation();
  useEffect(() => {
    window.scrollTo(0, 0);
  }, [pathname]);
  return null;
}

function Page({ children }) {
  return (
    <Suspense fallback={<p>Loading…</p>}>
      <ScrollReset />
      {children}
    </Suspense>
  );
}

export function NotFound() {
  return (
    <div className="card">
      <h1>Page not found</h1>
      <p>There is nothing at this address. <a href="/">Go to the start page</a>.</p>
    </div>
  );
}

export function ErrorPage() {
  return (
    <div className="card">
      <h1>Something went wrong</h1>
      <p>The console met an error. <a href="/">Start again</a>.</p>
    </div>
  );
}

export function createAppRouter() {
  return createBrowserRouter([
    {
      path: "/auth",
      element: <AuthLayout />,
      children: [
        { path: "login", element: <LoginPage /> },
        { path: "register", element: <RegisterPage /> },
        { path: "forgot-password", element: <ForgotPasswordPage /> },
        { path: "billing", element: <BillingPage /> },
        { path: "shared", element: <SharedPage /> },
        { path: ":uid/:token", element: <ResetPage /> },
      ],
    },
    {
      element: <RequireSession />,
      children: [
        {
          element: <MainLayout />,
          errorElement: <ErrorPage />,
          children: [
            { index: true, element: <Page><Home /></Page> },
            { path: "fileviewer", element: <Page><FileViewer /></Page> },
            { path: "admin/*", element: <Page><Admin /></Page> },
            { path: "user-terms", element: <Page><Admin terms /></Page> },
            { path: "error", element: <ErrorPage /> },
            { path: "*", element: <NotFound /> },
          ],
        },
      ],
    },
  ]);
}

export function App({ router }) {
  return (
    <SWRConfig value={{ fetcher, shouldRetryOnError: false }}>
      <NotificationsProvider>
        <RouterProvider router={router} />
      </NotificationsProvider>
    </SWRConfig>
  );
}
