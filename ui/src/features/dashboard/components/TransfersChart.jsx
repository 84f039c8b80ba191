import {
  VictoryAxis,
  VictoryBar,
  VictoryChart,
  VictoryLegend,
  VictoryStack,
} from "victory";

const COLOURS = {
  sftp: "#3D37FF",
  ftp: "#26A69A",
  web: "#31CCEC",
  mail: "#FFBF1F",
};

/** A stacked bar per month over the last 12 months, one colour per protocol. */
export default function TransfersChart({ series, width }) {
  const height = 300;
  return (
    <div data-testid="transfers-chart">
      <VictoryChart width={width} height={height} domainPadding={{ x: 20 }}>
        <VictoryLegend
          x={50}
          y={0}
          orientation="horizontal"
          data={series.map((s) => ({
            name: s.name.toUpperCase(),
            symbol: { fill: COLOURS[s.name] || "#757575" },
          }))}
        />
        <VictoryAxis style={{ tickLabels: { fontSize: 9, angle: -30 } }} />
        <VictoryAxis
          dependentAxis
          tickFormat={(t) => (Number.isInteger(t) ? t : "")}
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
