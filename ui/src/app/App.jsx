import { RouterProvider } from "react-router";
import { SWRConfig } from "swr";
import { ConfirmProvider } from "../components/Dialog.jsx";
import { NotificationsProvider } from "../components/notifications.jsx";

const swrOptions = {
  shouldRetryOnError: false,
  revalidateOnFocus: true,
  keepPreviousData: true,
};

export function App({ router }) {
  return (
    <SWRConfig value={swrOptions}>
      <NotificationsProvider>
        <ConfirmProvider>
          <RouterProvider router={router} />
        </ConfirmProvider>
      </NotificationsProvider>
    </SWRConfig>
  );
}
