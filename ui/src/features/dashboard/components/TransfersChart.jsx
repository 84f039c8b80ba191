import {
  VictoryAxis,
  VictoryBar,
  VictoryChart,
  VictoryLegend,
  VictoryStack,
} from "victory";
import { AXIS_FONT_SIZE, axisTicks } from "./axisTicks.js";

export const COLOURS = {
  sftp: "#3D37FF",
  ftp: "#26A69A",
  web: "#31CCEC",
  mail: "#FFBF1F",
};
const AXIS_TEXT = "#424242";

/**
 * A stacked bar per day, week or month (as the series has them), one colour per
 * protocol. Narrow widths get tighter padding and fewer, stacked labels. It is a
 * picture only: the dashboard puts the same numbers in a table for screen readers.
 */
export default function TransfersChart({ series, width }) {
  const height = 300;
  const narrow = width < 560;
  const padding = narrow
    ? { top: 40, bottom: 50, left: 40, right: 12 }
    : { top: 40, bottom: 50, left: 50, right: 30 };
  const bars = series.length ? series[0].data.map((point) => point.x) : [];
  const [format] = axisTicks(
    bars,
    width - padding.left - padding.right - 40, // the bars' domain padding
  );
  return (
    <div data-testid="transfers-chart">
      <VictoryChart
        width={width}
        height={height}
        padding={padding}
        domainPadding={{ x: narrow ? 12 : 20 }}
      >
        <VictoryLegend
          x={padding.left}
          y={0}
          orientation="horizontal"
          gutter={narrow ? 12 : 20}
          style={{ labels: { fontSize: AXIS_FONT_SIZE, fill: AXIS_TEXT } }}
          data={series.map((s) => ({
            name: s.name.toUpperCase(),
            symbol: { fill: COLOURS[s.name] || "#757575" },
          }))}
        />
        <VictoryAxis
          tickValues={bars}
          tickFormat={(t, i) => format(bars[i] ?? t, i)}
          style={{
            tickLabels: {
              fontSize: AXIS_FONT_SIZE,
              fill: AXIS_TEXT,
              padding: 6,
            },
          }}
        />
        <VictoryAxis
          dependentAxis
          tickFormat={(t) => (Number.isInteger(t) ? t : "")}
          style={{ tickLabels: { fontSize: AXIS_FONT_SIZE, fill: AXIS_TEXT } }}
        />
        <VictoryStack>
          {series.map((s) => (
            <VictoryBar
              key={s.name}
              data={s.data}
              style={{ data: { fill: COLOURS[s.name] || "#757575" } }}
            />
          ))}
        </VictoryStack>
      </VictoryChart>
    </div>
  );
}
